/**
 * @module bench/scale/processes
 * Contender processes of `bench:scale`: start one (child.ts, transpiled to plain
 * JavaScript, with an IPC channel), wait for its messages, and make sure none outlives
 * the bench.
 */
import { fork, type ChildProcess } from 'node:child_process';
import type { ChildConfig, ChildMessage, ChildReport, ParentMessage } from './child.js';
import { compiledChild } from './compiled-child.js';

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of live) child.kill('SIGKILL');
});

/** One contender process and what it said. */
export class ContenderProcess {
  readonly child: ChildProcess;
  readonly done: string[] = [];
  readonly errors: string[] = [];
  readonly ready: Promise<void>;
  readonly exited: Promise<number | null>;
  private report: ((report: ChildReport) => void) | undefined;
  onDone: ((id: string) => void) | undefined;

  constructor(config: ChildConfig) {
    this.child = fork(compiledChild(), [JSON.stringify(config)], { execArgv: [], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    live.add(this.child);
    this.exited = new Promise((resolve) =>
      this.child.on('exit', (code) => {
        live.delete(this.child);
        resolve(code);
      }),
    );
    this.ready = new Promise((resolve, reject) => {
      this.child.on('message', (message: ChildMessage) => {
        if (message.type === 'ready') resolve();
        else if (message.type === 'done') {
          this.done.push(message.id);
          this.onDone?.(message.id);
        } else if (message.type === 'report') this.report?.(message.report);
        else if (message.type === 'error') {
          this.errors.push(message.message);
          if (this.errors.length <= 3) process.stderr.write(`[${config.mode} ${this.child.pid}] ${message.message}\n`);
        }
      });
      void this.exited.then((code) => reject(new Error(`${config.mode} process exited (${code}) before it was ready: ${this.errors.join('; ')}`)));
    });
  }

  send(message: ParentMessage): void {
    this.child.send(message);
  }

  /** Stops the contender and collects what it measured (its connections stay open). */
  collect(): Promise<ChildReport> {
    const report = new Promise<ChildReport>((resolve) => (this.report = resolve));
    this.send({ type: 'report' });
    return report;
  }

  /** Closes its connections and waits for it to exit. */
  async exit(): Promise<void> {
    if (this.child.exitCode !== null || this.child.signalCode !== null) return;
    this.send({ type: 'exit' });
    await this.exited;
  }
}

/** Resolves once `count` ids were reported done across `processes`, or rejects after `timeoutMs`. */
export function allDone(processes: ContenderProcess[], count: number, timeoutMs: number): Promise<number> {
  return new Promise((resolve, reject) => {
    let done = processes.reduce((sum, p) => sum + p.done.length, 0);
    const timer = setTimeout(() => reject(new Error(`timed out: ${done} of ${count} done after ${timeoutMs} ms`)), timeoutMs);
    const check = () => {
      if (done >= count) {
        clearTimeout(timer);
        resolve(performance.timeOrigin + performance.now());
      }
    };
    for (const p of processes)
      p.onDone = () => {
        done++;
        check();
      };
    check();
  });
}
