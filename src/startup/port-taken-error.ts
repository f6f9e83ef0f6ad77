/** PORT is held by another process: found before the broker starts and the state replays, not after. */
export class PortTakenError extends Error {
  constructor(host: string, port: number) {
    super(`PORT ${port} on ${host} is taken by another process; stop it or set PORT to a free port`);
    this.name = 'PortTakenError';
  }
}
