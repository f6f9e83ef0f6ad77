/** PORT is held by another process: found before the broker starts and the state replays, not after. */
export class PortTakenError extends Error {
  constructor(host: string, port: number) {
    super(`PORT ${port} on ${host} is taken by another process; stop it or set PORT to a free port`);
    this.name = 'PortTakenError';
  }
}

/** HOST names no address this machine can listen on: a bad setting, told as one (not a stack trace), found as early. */
export class HostUnusableError extends Error {
  constructor(host: string, code: string) {
    const what =
      code === 'ENOTFOUND' || code === 'EAI_AGAIN'
        ? 'is a name this machine cannot resolve'
        : code === 'EAFNOSUPPORT'
          ? 'is of an address family this machine does not support (IPv6 turned off?)'
          : 'is no address of this machine';
    super(`HOST=${host} ${what} (${code}); set HOST to one of its addresses, or 0.0.0.0 to listen on all of them`);
    this.name = 'HostUnusableError';
  }
}

const HOST_CODES = new Set(['EADDRNOTAVAIL', 'ENOTFOUND', 'EAI_AGAIN', 'EAFNOSUPPORT']);

/** A listen's failure as the setting it is about, when it is about one; else the error itself. */
export function listenFailure(err: NodeJS.ErrnoException, host: string, port: number): Error {
  if (err.code === 'EADDRINUSE') return new PortTakenError(host, port);
  if (err.code !== undefined && HOST_CODES.has(err.code)) return new HostUnusableError(host, err.code);
  return err;
}
