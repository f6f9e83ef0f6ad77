import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The project root: README blocks run from there, as a user who cloned it would. */
export const ROOT = join(__dirname, '..', '..');

/** The shell block between `<!-- name:start -->` and `<!-- name:end -->` in the README ('' when missing). */
export function readmeBlock(name: string): string {
  const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
  const pattern = new RegExp(`<!-- ${name}:start -->\\s*\`\`\`sh\\n([\\s\\S]*?)\`\`\`\\s*<!-- ${name}:end -->`);
  return pattern.exec(readme)?.[1] ?? '';
}

export const hasCommand = (cmd: string): boolean => spawnSync('bash', ['-c', `command -v ${cmd}`]).status === 0;

export interface BashRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a script with `bash -euo pipefail`, killed after a minute. Async on
 * purpose: the service under test runs in the test's process and must keep
 * answering while the script talks to it.
 */
export function runBash(script: string, env: Record<string, string>): Promise<BashRun> {
  return new Promise((resolve) => {
    // stdin not a socket: bash would otherwise source /etc/bash.bashrc (its rshd heuristic).
    const child = spawn('bash', ['-euo', 'pipefail', '-c', script], {
      cwd: ROOT,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 60000);
    child.on('exit', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
  });
}
