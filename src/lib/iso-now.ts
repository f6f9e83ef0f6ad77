let madeAt = -1;
let made = '';

/**
 * `new Date().toISOString()`, made once per millisecond. Every record the service writes carries such a timestamp
 * (an accepted task three, a callback attempt one), many in each millisecond under load, and formatting a date costs
 * about a microsecond: half as much as serializing an attempt record, 1.5 % of the api's CPU per accepted task.
 */
export function isoNow(): string {
  const now = Date.now();
  if (now !== madeAt) {
    madeAt = now;
    made = new Date(now).toISOString();
  }
  return made;
}
