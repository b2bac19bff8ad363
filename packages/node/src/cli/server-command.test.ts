import { mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { silentLogger } from '../logging/logger.ts';
import { UsageError } from './args.ts';
import type { ClusterOptions } from './cluster-flags.ts';
import { CLUSTER_SECRET_FILE, clusterSecretSource } from './cluster-flags.ts';
import { parseServerOptions, SERVER_USAGE } from './server-command.ts';

const GIB = 1024 * 1024 * 1024;

function parsed(...argv: string[]) {
  const options = parseServerOptions(argv, 10 * GIB);
  if (options === 'help') throw new Error('expected options, got help');
  return options;
}

function usageError(...argv: string[]): string {
  try {
    parseServerOptions(argv, 10 * GIB);
  } catch (err) {
    if (err instanceof UsageError) return err.message;
    throw err;
  }
  throw new Error(`expected a usage error for ${JSON.stringify(argv)}`);
}

describe('parseServerOptions', () => {
  it('gives the defaults, no clustering among them', () => {
    expect(parsed()).toEqual({
      dataDir: resolve('styx-data'),
      host: '127.0.0.1',
      port: 5680,
      amqpPort: 5672,
      managementHost: '127.0.0.1',
      managementPort: 15680,
      managementHostnames: [],
      metricsAuth: false,
      metricsCacheMs: 5000,
      logLevel: 'info',
      logFormat: undefined,
      memoryBudgetMib: 4096,
      diskFreeLimitBytes: 50_000_000,
      frameMax: 8 * 1024 * 1024,
      heartbeatS: 60,
      cluster: undefined,
      tls: undefined,
    });
    expect(parseServerOptions(['--', '--help'])).toBe('help');
  });

  it('reads the TLS flags: a TLS listener beside the plain one, or instead of it with --port none', () => {
    const files = ['--tls-cert', 'c.pem', '--tls-key', 'k.pem'];
    expect(parsed(...files, '--tls-port', '5681', '--tls-ca', 'ca.pem')).toMatchObject({
      port: 5680,
      managementPort: 15680,
      tls: {
        files: { certFile: resolve('c.pem'), keyFile: resolve('k.pem'), caFile: resolve('ca.pem') },
        port: 5681,
        managementPort: undefined,
      },
    });
    expect(
      parsed(
        ...files,
        '--port',
        'none',
        '--tls-port',
        '0',
        '--management-port',
        '0',
        '--management-tls-port',
        '0',
      ),
    ).toMatchObject({ port: undefined, managementPort: 0, tls: { port: 0, managementPort: 0 } });
    expect(parsed(...files, '--management-tls-port', '15681').tls).toMatchObject({
      port: undefined,
      managementPort: 15681,
    });
  });

  it('reads the AMQP ports: 5672 by default (0 off), amqps on 5671 once a certificate is given', () => {
    expect(parsed().amqpPort).toBe(5672);
    expect(parsed('--amqp-port', '5700').amqpPort).toBe(5700);
    expect(parsed('--amqp-port', '0').amqpPort).toBeUndefined();
    expect(parsed().tls).toBeUndefined();
    const tls = ['--tls-cert', '/c.pem', '--tls-key', '/k.pem'];
    expect(parsed(...tls).tls?.amqpsPort).toBe(5671);
    expect(parsed(...tls, '--amqps-port', '5701').tls?.amqpsPort).toBe(5701);
    expect(parsed(...tls, '--amqps-port', '0', '--tls-port', '5681').tls?.amqpsPort).toBeUndefined();
    expect(usageError(...tls, '--amqps-port', '0')).toMatch(/no TLS listener named/);
    expect(usageError('--amqps-port', '5671')).toBe('--amqps-port needs --tls-cert and --tls-key');
    expect(usageError('--amqp-port', '70000')).toMatch(/--amqp-port/);
  });

  it('refuses TLS flags that do not go together', () => {
    expect(usageError('--tls-cert', 'c.pem', '--tls-port', '5681')).toBe(
      '--tls-cert needs --tls-key (the key of that certificate)',
    );
    expect(usageError('--tls-key', 'k.pem', '--tls-port', '5681')).toBe(
      '--tls-key needs --tls-cert (the certificate of that key)',
    );
    expect(usageError('--tls-port', '5681')).toBe('--tls-port needs --tls-cert and --tls-key');
    expect(usageError('--management-tls-port', '15681')).toBe(
      '--management-tls-port needs --tls-cert and --tls-key',
    );
    expect(usageError('--tls-ca', 'ca.pem')).toBe('--tls-ca needs --tls-cert and --tls-key');
    expect(usageError('--tls-cert', 'c.pem', '--tls-key', 'k.pem', '--amqps-port', '0')).toMatch(
      /^--tls-cert: no TLS listener named/,
    );
    expect(usageError('--port', 'none')).toBe(
      '--port none leaves clients no listener: give --tls-port for wss',
    );
    expect(usageError('--tls-cert', 'c.pem', '--tls-key', 'k.pem', '--tls-port', 'x')).toBe(
      "--tls-port must be a whole number, got 'x'",
    );
  });

  it('reads --disk-free-limit as bytes with units or mem_relative:FACTOR, and refuses anything else', () => {
    expect(parsed('--disk-free-limit', '2GB').diskFreeLimitBytes).toBe(2_000_000_000);
    expect(parsed('--disk-free-limit', '1GiB').diskFreeLimitBytes).toBe(GIB);
    expect(parsed('--disk-free-limit', '750kB').diskFreeLimitBytes).toBe(750_000);
    expect(parsed('--disk-free-limit', '0').diskFreeLimitBytes).toBe(0);
    expect(parsed('--disk-free-limit', 'mem_relative:1.5').diskFreeLimitBytes).toBe(15 * GIB);
    expect(parsed('--disk-free-limit', 'mem_relative:0.25').diskFreeLimitBytes).toBe(2.5 * GIB);
    for (const bad of ['', '=-5', '1.5GB', '10 parsecs', 'GB', '5XB', '99999999999999999999']) {
      // (`--disk-free-limit=-5`: a value starting with a dash must be attached.)
      const argv = bad.startsWith('=') ? [`--disk-free-limit${bad}`] : ['--disk-free-limit', bad];
      expect(usageError(...argv)).toMatch(/^--disk-free-limit: '/);
    }
    expect(usageError('--disk-free-limit', '2 parsecs')).toBe(
      "--disk-free-limit: '2 parsecs' is not a disk free limit: expected bytes with an optional unit " +
        '(50MB, 2GB, 1GiB, 500000000) or mem_relative:FACTOR (e.g. mem_relative:1.5)',
    );
    for (const bad of [
      'mem_relative:',
      'mem_relative:0',
      'mem_relative:-1',
      'mem_relative:x',
      'mem_relative:101',
    ]) {
      expect(usageError('--disk-free-limit', bad)).toMatch(
        /the factor of mem_relative must be a number above 0/,
      );
    }
    expect(SERVER_USAGE).toContain('--disk-free-limit LIMIT');
  });

  it('reads the management names (repeated or comma separated) and the /metrics flags', () => {
    const options = parsed(
      '--management-hostname',
      'styx.example.com, styx-1',
      '--management-hostname',
      '[fd00::5]',
      '--metrics-auth',
      '--metrics-cache-seconds',
      '0',
    );
    expect(options.managementHostnames).toEqual(['styx.example.com', 'styx-1', '[fd00::5]']);
    expect([options.metricsAuth, options.metricsCacheMs]).toEqual([true, 0]);
    expect(usageError('--management-hostname', 'styx.example.com:443')).toBe(
      "--management-hostname takes host names without a port, got 'styx.example.com:443'",
    );
    expect(usageError('--metrics-cache-seconds', '301')).toMatch(/metrics-cache-seconds/);
  });

  it('reads the clustering flags, --join repeated, after a leading `--` too', () => {
    expect(
      parsed(
        '--',
        '--cluster-listen',
        '0.0.0.0:25680',
        '--join',
        'node-a:25680',
        '--join',
        '[fd00::2]:25680',
        '--join',
        'node-a:25680',
        '--node-name',
        'styx-3',
        '--cluster-secret-file',
        '/etc/styx/secret',
      ).cluster,
    ).toEqual({
      listen: '0.0.0.0:25680',
      join: ['node-a:25680', '[fd00::2]:25680'],
      discovery: undefined,
      nodeName: 'styx-3',
      secretFile: '/etc/styx/secret',
    });
    expect(parsed('--cluster-listen', '127.0.0.1:0').cluster).toEqual({
      listen: '127.0.0.1:0',
      join: [],
      discovery: undefined,
      nodeName: undefined,
      secretFile: undefined,
    });
  });

  it('refuses bad addresses and clustering flags without --cluster-listen', () => {
    expect(usageError('--cluster-listen', 'node-a')).toBe(
      "--cluster-listen: 'node-a' is not HOST:PORT (an IPv6 address goes in brackets: [::1]:25680)",
    );
    expect(usageError('--cluster-listen', 'a:70000')).toBe(
      "--cluster-listen: the port of 'a:70000' must be between 0 and 65535",
    );
    expect(usageError('--cluster-listen', 'a:1', '--join', 'b:0')).toBe(
      "--join: the port of 'b:0' must be between 1 and 65535",
    );
    for (const flag of ['--join', '--node-name', '--cluster-secret-file']) {
      const value = flag === '--join' ? 'b:1' : 'x';
      expect(usageError(flag, value)).toBe(
        `${flag} needs --cluster-listen HOST:PORT (clustering is off without it)`,
      );
    }
    expect(usageError('--cluster-listen', 'a:1', '--node-name', ' ')).toMatch(
      /--node-name must be 1 to 255 bytes/,
    );
    expect(usageError('--cluster-listen', 'a:1', '--node-name', 'n'.repeat(256))).toMatch(/--node-name/);
    expect(usageError('--cluster-listen')).toMatch(/--cluster-listen/);
  });

  it('reads DNS discovery: SRV by default, A/AAAA with a port, servers repeated or comma separated', () => {
    const listen = ['--cluster-listen', '0.0.0.0:25680'];
    expect(parsed(...listen, '--discover-dns', '_styx-cluster._tcp.example.com').cluster?.discovery).toEqual({
      name: '_styx-cluster._tcp.example.com',
      port: undefined,
      servers: [],
    });
    expect(
      parsed(
        ...listen,
        '--discover-dns',
        'styx.example.com.',
        '--discover-dns-port',
        '25680',
        '--discover-dns-server',
        '127.0.0.1:5353,10.0.0.53',
        '--discover-dns-server',
        '[fd00::53]:53',
      ).cluster?.discovery,
    ).toEqual({
      name: 'styx.example.com.',
      port: 25680,
      servers: ['127.0.0.1:5353', '10.0.0.53', '[fd00::53]:53'],
    });
  });

  it('refuses bad DNS discovery flags', () => {
    const listen = ['--cluster-listen', 'a:1'];
    expect(usageError('--discover-dns', 'styx.example.com')).toBe(
      '--discover-dns needs --cluster-listen HOST:PORT (clustering is off without it)',
    );
    expect(usageError(...listen, '--discover-dns-port', '25680')).toBe(
      '--discover-dns-port needs --discover-dns NAME',
    );
    expect(usageError(...listen, '--discover-dns-server', '127.0.0.1')).toBe(
      '--discover-dns-server needs --discover-dns NAME',
    );
    expect(usageError(...listen, '--discover-dns', 'styx example')).toBe(
      "--discover-dns takes a DNS name (e.g. _styx-cluster._tcp.example.com), got 'styx example'",
    );
    expect(usageError(...listen, '--discover-dns', 'a.b', '--discover-dns-port', '0')).toBe(
      '--discover-dns-port must be between 1 and 65535, got 0',
    );
    for (const server of ['dns.example.com', '127.0.0.1:99999', '[10.0.0.1]:53']) {
      expect(usageError(...listen, '--discover-dns', 'a.b', '--discover-dns-server', server)).toBe(
        `--discover-dns-server takes an IP address with an optional port (IP:PORT, [IPv6]:PORT), got '${server}'`,
      );
    }
  });

  it('describes every clustering flag in --help', () => {
    for (const flag of [
      '--cluster-listen HOST:PORT',
      '--join HOST:PORT',
      '--node-name NAME',
      '--cluster-secret-file PATH',
      '--discover-dns NAME',
      '--discover-dns-port PORT',
      '--discover-dns-server IP[:PORT]',
    ]) {
      expect(SERVER_USAGE).toContain(flag);
    }
    expect(SERVER_USAGE).toContain('$STYX_CLUSTER_SECRET');
    expect(SERVER_USAGE).toContain('<data-dir>/cluster-secret');
  });
});

describe('clusterSecretSource', () => {
  let dir: string;
  const cluster: ClusterOptions = {
    listen: '127.0.0.1:0',
    join: [],
    discovery: undefined,
    nodeName: undefined,
    secretFile: undefined,
  };

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'styx-secret-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('takes --cluster-secret-file first, then $STYX_CLUSTER_SECRET', async () => {
    const env = { STYX_CLUSTER_SECRET: 'from-the-environment' };
    expect(await clusterSecretSource({ ...cluster, secretFile: '/s' }, dir, silentLogger(), env)).toEqual({
      file: '/s',
    });
    expect(await clusterSecretSource(cluster, dir, silentLogger(), env)).toEqual({ env });
  });

  it('creates <data-dir>/cluster-secret (0600) on first start and keeps it afterwards', async () => {
    const path = join(dir, CLUSTER_SECRET_FILE);
    expect(await clusterSecretSource(cluster, dir, silentLogger(), { STYX_CLUSTER_SECRET: '' })).toEqual({
      file: path,
    });
    const secret = await readFile(path, 'utf8');
    expect(secret).toMatch(/^[0-9a-f]{64}\n$/);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    expect(await clusterSecretSource(cluster, dir, silentLogger(), {})).toEqual({ file: path });
    expect(await readFile(path, 'utf8')).toBe(secret);
    await writeFile(path, 'an operator-chosen secret\n');
    await clusterSecretSource(cluster, dir, silentLogger(), {});
    expect(await readFile(path, 'utf8')).toBe('an operator-chosen secret\n');
  });
});
