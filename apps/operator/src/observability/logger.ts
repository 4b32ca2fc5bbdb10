import { pino, type Logger as Pino } from 'pino';
import type { LogFields, Logger } from '@karpenter-operator/core';

/** Fields whose values are never printed, wherever they appear in a log line. */
const REDACT = [
  '*.token',
  '*.password',
  '*.secret',
  '*.data',
  '*.stringData',
  '*.userData',
  '*.credentials',
  '*.aws_secret_access_key',
  'token',
  'data',
  'userData',
];

class PinoLogger implements Logger {
  constructor(private readonly p: Pino) {}
  debug(msg: string, fields?: LogFields): void {
    this.p.debug(fields ?? {}, msg);
  }
  info(msg: string, fields?: LogFields): void {
    this.p.info(fields ?? {}, msg);
  }
  warn(msg: string, fields?: LogFields): void {
    this.p.warn(fields ?? {}, msg);
  }
  error(msg: string, fields?: LogFields): void {
    this.p.error(fields ?? {}, msg);
  }
  child(fields: LogFields): Logger {
    return new PinoLogger(this.p.child(fields));
  }
}

/** Structured JSON logs on stdout (or `destination`), with secret-looking fields redacted. */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  const options = {
    level,
    base: { component: 'karpenter-operator' },
    redact: { paths: REDACT, censor: '[REDACTED]' },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return new PinoLogger(destination ? pino(options, destination) : pino(options));
}
