import { EventEmitter } from 'node:events';
import { describe, expect, it } from 'vitest';
import type { Logger } from '@karpenter-operator/core';
import { ExitCodes, Manager } from './manager.js';

function recordingLogger(): Logger & { errors: string[] } {
  const errors: string[] = [];
  const logger: Logger & { errors: string[] } = {
    errors,
    debug: () => {},
    info: () => {},
    warn: () => {},
    error: (msg: string) => void errors.push(msg),
    child: () => logger,
  };
  return logger;
}

/** A manager whose signals come from an emitter, with a log of what stopped in which order. */
function world() {
  const signals = new EventEmitter();
  const logger = recordingLogger();
  const order: string[] = [];
  const manager = new Manager({ logger, signals });
  const server = (name: string) => ({
    close: (cb?: (err?: Error) => void) => {
      order.push(name);
      cb?.();
      return undefined as never;
    },
  });
  return { signals, logger, order, manager, server };
}

describe('Manager', () => {
  it('stops the steps in registration order, each after the previous one settled, and the servers last', async () => {
    const { manager, order, server } = world();
    manager.addServer(server('health'));
    manager.onStop('runtime', async () => {
      await new Promise((r) => setTimeout(r, 5));
      order.push('runtime');
    });
    manager.addServer(server('metrics'));
    manager.onStop('events', () => void order.push('events'));
    manager.onStop('elector', () => void order.push('elector'));
    expect(await manager.stop(ExitCodes.ok, 'test')).toBe(ExitCodes.ok);
    expect(order).toEqual(['runtime', 'events', 'elector', 'health', 'metrics']);
  });

  it('the first stop decides the exit code; later stops return it and run nothing again', async () => {
    const { manager, order } = world();
    manager.onStop('runtime', () => void order.push('runtime'));
    const first = manager.stop(ExitCodes.lostLease, 'lost lease');
    const second = manager.stop(ExitCodes.ok, 'SIGTERM');
    expect([await first, await second, await manager.done]).toEqual([ExitCodes.lostLease, ExitCodes.lostLease, ExitCodes.lostLease]);
    expect(order).toEqual(['runtime']);
  });

  it('a step learns the exit code (the operator keeps a lease it lost)', async () => {
    const { manager } = world();
    const seen: number[] = [];
    manager.onStop('elector', (code) => void seen.push(code));
    await manager.stop(ExitCodes.platformChanged, 'platform changed');
    expect(seen).toEqual([ExitCodes.platformChanged]);
  });

  it('a failing step is logged naming it and does not keep the later steps or the servers from stopping', async () => {
    const { manager, order, logger, server } = world();
    manager.addServer(server('health'));
    manager.onStop('runtime', () => {
      throw new Error('boom');
    });
    manager.onStop('events', () => void order.push('events'));
    expect(await manager.stop(ExitCodes.ok, 'test')).toBe(ExitCodes.ok);
    expect(order).toEqual(['events', 'health']);
    expect(logger.errors).toEqual(['stopping: runtime']);
  });

  it.each([
    { name: 'SIGTERM', signal: 'SIGTERM' as const },
    { name: 'SIGINT', signal: 'SIGINT' as const },
  ])('$name stops with exit code 0, aborts start-up waits and unregisters the signal listeners', async ({ signal }) => {
    const { manager, signals, order } = world();
    manager.onStop('runtime', () => void order.push('runtime'));
    manager.handleSignals();
    expect(signals.listenerCount('SIGTERM') + signals.listenerCount('SIGINT')).toBe(2);
    expect(manager.signal.aborted).toBe(false);
    signals.emit(signal);
    expect(manager.signal.aborted).toBe(true);
    expect(await manager.done).toBe(ExitCodes.ok);
    expect(order).toEqual(['runtime']);
    expect(signals.listenerCount('SIGTERM') + signals.listenerCount('SIGINT')).toBe(0);
  });

  it('done stays pending until a stop', async () => {
    const { manager } = world();
    const settled = await Promise.race([manager.done.then(() => 'settled'), new Promise((r) => setTimeout(() => r('pending'), 20))]);
    expect(settled).toBe('pending');
  });
});
