import { createServer, type Server } from 'node:http';
import { DescribeInstancesCommand, DescribeSubnetsCommand, EC2Client } from '@aws-sdk/client-ec2';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { invocationsOf, startEc2FaultProxy, type Ec2Fault, type Ec2FaultProxy, type ProxiedRequest } from './ec2-fault-proxy.js';
import { LOOPBACK } from './ports.js';

// A stand-in for the emulator: answers DescribeInstances and DescribeSubnets with empty results.
const EMPTY: Record<string, string> = {
  DescribeInstances:
    '<DescribeInstancesResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><reservationSet/></DescribeInstancesResponse>',
  DescribeSubnets:
    '<DescribeSubnetsResponse xmlns="http://ec2.amazonaws.com/doc/2016-11-15/"><requestId>r</requestId><subnetSet/></DescribeSubnetsResponse>',
};

let upstream: Server;
let upstreamUrl: string;
let proxy: Ec2FaultProxy;

const client = (opts: { maxAttempts?: number; requestTimeout?: number } = {}) =>
  new EC2Client({
    endpoint: proxy.url,
    region: 'us-east-1',
    credentials: { accessKeyId: 'testing', secretAccessKey: 'testing' },
    maxAttempts: opts.maxAttempts ?? 1,
    requestHandler: { requestTimeout: opts.requestTimeout ?? 5_000, throwOnRequestTimeout: true },
  });

const failure = async (p: Promise<unknown>) => {
  const e = (await p.then(
    () => undefined,
    (err: unknown) => err,
  )) as { name?: string; $metadata?: { httpStatusCode?: number; attempts?: number } } | undefined;
  expect(e, 'the call should have failed').toBeDefined();
  return e!;
};

describe('EC2 fault proxy', () => {
  beforeAll(async () => {
    upstream = createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        const xml = EMPTY[new URLSearchParams(body).get('Action') ?? ''];
        res.writeHead(xml ? 200 : 400, { 'content-type': 'text/xml' });
        res.end(xml ?? '<Response><Errors><Error><Code>InvalidAction</Code><Message>x</Message></Error></Errors></Response>');
      });
    });
    await new Promise<void>((r) => upstream.listen(0, LOOPBACK, () => r()));
    const addr = upstream.address();
    upstreamUrl = `http://${LOOPBACK}:${typeof addr === 'object' && addr ? addr.port : 0}`;
  });

  afterEach(async () => {
    await proxy?.close();
  });

  afterAll(async () => {
    upstream.closeAllConnections();
    await new Promise((r) => upstream.close(r));
  });

  it('forwards when there is no fault and counts requests per Action', async () => {
    proxy = await startEc2FaultProxy(upstreamUrl);
    expect(proxy.url.startsWith(`http://${LOOPBACK}:`)).toBe(true);
    const ec2 = client();
    await ec2.send(new DescribeInstancesCommand({}));
    await ec2.send(new DescribeInstancesCommand({}));
    await ec2.send(new DescribeSubnetsCommand({}));
    expect(proxy.countsByAction()).toEqual({ DescribeInstances: 2, DescribeSubnets: 1 });
    const [first] = proxy.requests();
    expect(first).toMatchObject({
      seq: 1,
      action: 'DescribeInstances',
      fault: 'none',
      status: 200,
      attempt: 1,
      maxAttempts: 1,
      abandoned: false,
    });
    expect(first!.invocationId).toMatch(/^[0-9a-f-]{36}$/);
  });

  it.each([
    {
      name: 'RequestLimitExceeded, as EC2 throttles',
      fault: { kind: 'throttle', codes: ['RequestLimitExceeded'] } as Ec2Fault,
      error: 'RequestLimitExceeded',
      status: 400,
    },
    { name: 'Throttling', fault: { kind: 'throttle', codes: ['Throttling'] } as Ec2Fault, error: 'Throttling', status: 400 },
    { name: '503 Unavailable', fault: { kind: '5xx' } as Ec2Fault, error: 'Unavailable', status: 503 },
    {
      name: '500 InternalError',
      fault: { kind: '5xx', status: 500, code: 'InternalError' } as Ec2Fault,
      error: 'InternalError',
      status: 500,
    },
  ])('$name: the SDK sees the EC2 error and retries it as one call', async ({ fault, error, status }) => {
    proxy = await startEc2FaultProxy(upstreamUrl);
    proxy.setFault(fault);
    const e = await failure(client({ maxAttempts: 2 }).send(new DescribeInstancesCommand({})));
    expect(e.name).toBe(error);
    expect(e.$metadata?.httpStatusCode).toBe(status);
    expect(e.$metadata?.attempts).toBe(2);
    const calls = invocationsOf(proxy.requests());
    expect(calls).toHaveLength(1);
    expect(calls[0]).toMatchObject({ action: 'DescribeInstances', attempts: 2, maxAttempts: 2 });
    expect(proxy.requests().map((r) => [r.attempt, r.fault, r.status])).toEqual([
      [1, fault.kind, status],
      [2, fault.kind, status],
    ]);
  });

  it('records the instance IDs a DescribeInstances names, by InstanceId or instance-id filter', async () => {
    proxy = await startEc2FaultProxy(upstreamUrl);
    const ec2 = client();
    await ec2.send(
      new DescribeInstancesCommand({
        Filters: [
          { Name: 'tag:kubernetes.io/cluster/x', Values: ['owned'] },
          { Name: 'instance-id', Values: ['i-aaa', 'i-bbb'] },
        ],
      }),
    );
    await ec2.send(new DescribeInstancesCommand({ InstanceIds: ['i-ccc'] }));
    await ec2.send(new DescribeInstancesCommand({}));
    expect(proxy.requests().map((r) => r.instanceIds)).toEqual([['i-aaa', 'i-bbb'], ['i-ccc'], undefined]);
  });

  it('takes the throttling codes in turn and applies a fault only to the Actions named', async () => {
    proxy = await startEc2FaultProxy(upstreamUrl);
    proxy.setFault({ kind: 'throttle', codes: ['RequestLimitExceeded', 'Throttling'] }, { actions: ['DescribeInstances'] });
    const ec2 = client();
    expect((await failure(ec2.send(new DescribeInstancesCommand({})))).name).toBe('RequestLimitExceeded');
    expect((await failure(ec2.send(new DescribeInstancesCommand({})))).name).toBe('Throttling');
    await ec2.send(new DescribeSubnetsCommand({}));
    expect(proxy.requests().map((r) => [r.action, r.fault])).toEqual([
      ['DescribeInstances', 'throttle'],
      ['DescribeInstances', 'throttle'],
      ['DescribeSubnets', 'none'],
    ]);
    proxy.setFault({ kind: 'none' });
    await ec2.send(new DescribeInstancesCommand({}));
    expect(proxy.countsByAction()).toEqual({ DescribeInstances: 3, DescribeSubnets: 1 });
  });

  it('hang: never answers; the request is logged as abandoned when the client times out', async () => {
    proxy = await startEc2FaultProxy(upstreamUrl);
    proxy.setFault({ kind: 'hang' });
    const started = Date.now();
    const e = await failure(client({ requestTimeout: 300 }).send(new DescribeInstancesCommand({})));
    expect(e.name).toBe('TimeoutError');
    await new Promise((r) => setTimeout(r, 50));
    const [r] = proxy.requests();
    expect(r).toMatchObject({ fault: 'hang', abandoned: true });
    expect(r!.status).toBeUndefined();
    const held = r!.endedAt! - r!.receivedAt;
    expect(held).toBeGreaterThanOrEqual(250);
    expect(held).toBeLessThan(Date.now() - started + 1);
  });

  it('slow: forwards after the delay', async () => {
    proxy = await startEc2FaultProxy(upstreamUrl);
    proxy.setFault({ kind: 'slow', ms: 300 });
    const started = Date.now();
    await client().send(new DescribeInstancesCommand({}));
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    expect(proxy.requests()[0]).toMatchObject({ fault: 'slow', status: 200, abandoned: false });
  });

  it('close drops hanging connections', async () => {
    proxy = await startEc2FaultProxy(upstreamUrl);
    proxy.setFault({ kind: 'hang' });
    const pending = failure(client({ requestTimeout: 30_000 }).send(new DescribeInstancesCommand({})));
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await proxy.close();
    await pending;
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});

describe('invocationsOf', () => {
  const req = (seq: number, receivedAt: number, invocationId: string | undefined, attempt?: number): ProxiedRequest => ({
    seq,
    action: 'DescribeInstances',
    receivedAt,
    fault: 'throttle',
    abandoned: false,
    ...(invocationId ? { invocationId } : {}),
    ...(attempt ? { attempt, maxAttempts: 5 } : {}),
  });
  it.each([
    { name: 'no requests', requests: [], expected: [] },
    { name: 'requests without an invocation id are left out', requests: [req(1, 0, undefined)], expected: [] },
    {
      name: 'attempts of two calls interleaved',
      requests: [req(1, 0, 'a', 1), req(2, 10, 'b', 1), req(3, 300, 'a', 2), req(4, 1_000, 'a', 3)],
      expected: [
        { invocationId: 'a', action: 'DescribeInstances', attempts: 3, maxAttempts: 5, gapsMs: [300, 700] },
        { invocationId: 'b', action: 'DescribeInstances', attempts: 1, maxAttempts: 5, gapsMs: [] },
      ],
    },
  ])('$name', ({ requests, expected }) => {
    expect(invocationsOf(requests)).toEqual(expected);
  });
});
