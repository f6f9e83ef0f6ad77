import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Which of `pids` owns the loopback TCP socket bound to local port `port` (the peer port a server sees) and connected
 * to `remotePort` (the server's own), read from Linux's /proc: the socket's inode from /proc/net/tcp, then the process
 * holding a descriptor to it. Both ends are matched: Linux gives one local port to several connections when their
 * remote ends differ (another process's connection to the broker), and the first such line named none of `pids`.
 * Undefined when none does (or not on Linux). Synchronous, so a server can call it while the connection is new.
 */
/**
 * ChaosReceiver's `identify` for callbacks from child processes: which of `children` (their index, as a string) sent a
 * connection, from its peer port and the receiver's own. The list is read at each call: children started later count.
 */
export function senderAmong(children: readonly { process: { pid?: number } }[]) {
  return (port: number, receiverPort: number): string | undefined => {
    const pid = socketOwner(
      port,
      children.map((c) => c.process.pid ?? 0),
      receiverPort,
    );
    return pid === undefined ? undefined : String(children.findIndex((c) => c.process.pid === pid));
  };
}

export function socketOwner(port: number, pids: number[], remotePort: number): number | undefined {
  const inode = inodeOfConnection(port, remotePort);
  if (inode === undefined) return undefined;
  const target = `socket:[${inode}]`;
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) return pid;
      } catch {
        /* closed meanwhile */
      }
    }
  }
  return undefined;
}

function inodeOfConnection(port: number, remotePort: number): string | undefined {
  let table: string;
  try {
    table = readFileSync('/proc/net/tcp', 'utf8');
  } catch {
    return undefined;
  }
  const hex = (p: number) => `:${p.toString(16).toUpperCase().padStart(4, '0')}`;
  for (const line of table.split('\n').slice(1)) {
    const cols = line.trim().split(/\s+/);
    // local_address and rem_address are "0100007F:PORT"; the inode is the tenth column
    if (cols[1]?.endsWith(hex(port)) && cols[2]?.endsWith(hex(remotePort)) && cols[9] !== '0') return cols[9];
  }
  return undefined;
}
