// styx.conf (`styx server --config FILE`): every flag has its key, each key sets exactly what its flag
// sets, flags given on the command line win, and every kind of bad file is refused naming the file,
// the line and the key (and, for a bad value, the form the key expects).
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { UsageError } from './args.ts';
import { parseServerOptions, SERVER_FLAGS, serverOptionsWithConfig } from './server-command.ts';
import { CONFIG_KEYS, ConfigFileError } from './server-config.ts';

const GIB = 1024 * 1024 * 1024;

let dir: string;
let counter = 0;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'styx-conf-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Writes `lines` to a new config file; returns its path. */
async function conf(...lines: string[]): Promise<string> {
  const file = join(dir, `styx-${++counter}.conf`);
  await writeFile(file, `${lines.join('\n')}\n`);
  return file;
}

async function withConfig(file: string, ...argv: string[]) {
  return serverOptionsWithConfig(['--config', file, ...argv], 10 * GIB);
}

async function configError(...lines: string[]): Promise<string> {
  const file = await conf(...lines);
  try {
    await withConfig(file);
  } catch (err) {
    if (err instanceof ConfigFileError) return err.message.replace(file, 'FILE');
    throw err;
  }
  throw new Error(`expected a config error for ${JSON.stringify(lines)}`);
}

/** A good value for each key, and the same as a flag. */
const EXAMPLES: Readonly<Record<string, string>> = {
  data_dir: '/var/lib/styx',
  'listeners.host': '0.0.0.0',
  'listeners.port': '5690',
  'listeners.tls.port': '5691',
  'listeners.amqp.port': '5692',
  'listeners.amqp.tls.port': '5693',
  'management.tls.port': '15691',
  'tls.cert_file': '/etc/styx/tls/cert.pem',
  'tls.key_file': '/etc/styx/tls/key.pem',
  'tls.ca_file': '/etc/styx/tls/ca.pem',
  'management.host': '0.0.0.0',
  'management.port': '15690',
  'management.hostname': 'styx.example.internal',
  'metrics.auth': 'true',
  'metrics.cache_seconds': '30',
  'log.level': 'debug',
  'log.format': 'json',
  'limits.memory_budget_mib': '2048',
  'disk_free_limit.absolute': '2GB',
  'disk_free_limit.relative': '1.5',
  'limits.frame_max': '65536',
  'limits.heartbeat': '30',
  'cluster.listen': '127.0.0.1:25690',
  'cluster.join': '127.0.0.1:25691',
  'cluster.discovery.dns': '_styx-cluster._tcp.example.internal',
  'cluster.discovery.dns_port': '25680',
  'cluster.discovery.dns_server': '127.0.0.1:5353',
  'cluster.node_name': 'styx-a',
  'cluster.secret_file': '/etc/styx/cluster-secret',
};

/** parseServerOptions(args), or its UsageError. */
function withoutIt(args: readonly string[]): unknown {
  try {
    return parseServerOptions(args, 10 * GIB);
  } catch (err) {
    if (err instanceof UsageError) return err;
    throw err;
  }
}

describe('CONFIG_KEYS', () => {
  it('gives every styx server flag (but --help and --config) a key, and each key names a flag', () => {
    const flags = Object.keys(SERVER_FLAGS).filter((f) => f !== 'help' && f !== 'config');
    expect([...new Set(CONFIG_KEYS.map(([, flag]) => flag))].sort()).toEqual(flags.sort());
    expect(Object.keys(EXAMPLES).sort()).toEqual(CONFIG_KEYS.map(([key]) => key).sort());
  });

  for (const [key, flag, , flagPrefix = ''] of CONFIG_KEYS) {
    it(`${key} sets what --${flag} ${flagPrefix}VALUE sets`, async () => {
      const value = EXAMPLES[key] as string;
      // Cluster flags other than --cluster-listen need it; both sides get the same one.
      const companion =
        flag.startsWith('cluster-') || flag.startsWith('discover-') || flag === 'join' || flag === 'node-name'
          ? ['--cluster-listen', '127.0.0.1:25699']
          : [];
      // --discover-dns-port and --discover-dns-server need --discover-dns as well.
      const discovery = flag.startsWith('discover-dns-') ? ['--discover-dns', 'styx.example.internal'] : [];
      // The TLS flags go together: a certificate, its key and a TLS listener (all but the one tested).
      const tlsCompanions: Readonly<Record<string, readonly string[]>> = {
        'tls-cert': ['--tls-key', '/k.pem', '--tls-port', '5681'],
        'tls-key': ['--tls-cert', '/c.pem', '--tls-port', '5681'],
        'tls-ca': ['--tls-cert', '/c.pem', '--tls-key', '/k.pem', '--tls-port', '5681'],
        'tls-port': ['--tls-cert', '/c.pem', '--tls-key', '/k.pem', '--management-tls-port', '15681'],
        'management-tls-port': ['--tls-cert', '/c.pem', '--tls-key', '/k.pem', '--tls-port', '5681'],
        'amqps-port': ['--tls-cert', '/c.pem', '--tls-key', '/k.pem'],
      };
      const extra =
        flag === 'cluster-listen' ? [] : [...companion, ...discovery, ...(tlsCompanions[flag] ?? [])];
      // A boolean flag takes no value: `key = true` is the bare flag.
      const isBoolean = SERVER_FLAGS[flag as keyof typeof SERVER_FLAGS].type === 'boolean';
      const asFlags = isBoolean ? [`--${flag}`] : [`--${flag}`, `${flagPrefix}${value}`];
      const fromFlag = parseServerOptions([...asFlags, ...extra], 10 * GIB);
      const fromFile = await withConfig(await conf(`${key} = ${value}`), ...extra);
      expect(fromFile).toEqual(fromFlag);
      // Without it: other options, or a refusal (a TLS key without its certificate).
      expect(fromFile).not.toEqual(withoutIt(extra));
    });
  }
});

describe('styx server --config FILE', () => {
  it('accepts deploy/styx.conf, the example for the systemd unit (docs/operations.md)', async () => {
    const example = join(import.meta.dirname, '..', '..', '..', '..', 'deploy', 'styx.conf');
    expect(await withConfig(example)).toMatchObject({
      dataDir: '/var/lib/styx',
      host: '0.0.0.0',
      managementHostnames: ['styx.example.com'],
      cluster: { listen: '0.0.0.0:25680', discovery: { name: 'styx.example.com', port: 25680, servers: [] } },
    });
  });

  it('reads comments, blank lines and spaces around =, and every key at once', async () => {
    const file = await conf(
      '# a styx.conf',
      '',
      ...Object.entries(EXAMPLES)
        .filter(([key]) => key !== 'disk_free_limit.relative')
        .map(([key, value]) => `  ${key}=${value}  `),
      'cluster.join = 127.0.0.1:25692',
    );
    const options = await withConfig(file);
    if (options === 'help') throw new Error('help');
    expect(options).toMatchObject({
      dataDir: '/var/lib/styx',
      host: '0.0.0.0',
      port: 5690,
      managementPort: 15690,
      logLevel: 'debug',
      frameMax: 65536,
      heartbeatS: 30,
      memoryBudgetMib: 2048,
      diskFreeLimitBytes: 2_000_000_000,
      cluster: {
        listen: '127.0.0.1:25690',
        join: ['127.0.0.1:25691', '127.0.0.1:25692'],
        nodeName: 'styx-a',
      },
    });
  });

  it('lets flags override the file (a repeatable flag replaces all of its values)', async () => {
    const file = await conf(
      'listeners.port = 5690',
      'cluster.listen = 127.0.0.1:25690',
      'cluster.join = 127.0.0.1:1',
    );
    const options = await withConfig(file, '--port', '5700', '--join', '127.0.0.1:2');
    if (options === 'help') throw new Error('help');
    expect(options.port).toBe(5700);
    expect(options.cluster?.join).toEqual(['127.0.0.1:2']);
    // pnpm start -- --config FILE: the leading `--` pnpm hands on.
    const viaPnpm = await serverOptionsWithConfig(['--', '--config', file, '--port', '5701'], 10 * GIB);
    expect(viaPnpm !== 'help' && viaPnpm.port).toBe(5701);
  });

  it('refuses an unknown key, naming it and its line', async () => {
    expect(await configError('listeners.port = 5690', 'listener.port = 5691')).toMatch(
      /^FILE:2: unknown key 'listener\.port' \(known keys: data_dir, listeners\.host, /,
    );
  });

  it('refuses a reserved key as not supported yet', async () => {
    expect(await configError('tls.verify_peer = true')).toBe(
      'FILE:1: tls.verify_peer is reserved for optional client certificates (tls.ca_file requires them), which Styx does not support yet',
    );
  });

  it('refuses bad values naming the key, the line and the expected form', async () => {
    expect(await configError('# ports', 'listeners.port = 56x0')).toBe(
      "FILE:2: listeners.port = 56x0: must be a whole number, got '56x0' (expected a port number, 0-65535, or none (no plain listener: TLS only))",
    );
    expect(await configError('management.port = 70000')).toBe(
      'FILE:1: management.port = 70000: must be between 0 and 65535, got 70000 (expected a port number, 0-65535 (0: no management API))',
    );
    expect(await configError('log.level = loud')).toMatch(
      /^FILE:1: log\.level = loud: must be one of fatal, .* \(expected fatal, error, /,
    );
    expect(await configError('log.format = xml')).toMatch(
      /^FILE:1: log\.format = xml: must be pretty or json/,
    );
    expect(await configError('limits.frame_max = 10')).toMatch(
      /^FILE:1: limits\.frame_max = 10: must be between 4096 and /,
    );
    expect(await configError('cluster.listen = nowhere')).toMatch(
      /^FILE:1: cluster\.listen = nowhere: .*\(expected HOST:PORT\)$/,
    );
    expect(
      await configError('cluster.listen = 127.0.0.1:1', 'cluster.join = 127.0.0.1:2', 'cluster.join = bad'),
    ).toMatch(/^FILE:3: cluster\.join = bad: /);
    expect(await configError('cluster.join = 127.0.0.1:2')).toMatch(
      /^FILE:1: cluster\.join = 127\.0\.0\.1:2: needs --cluster-listen/,
    );
  });

  it('takes disk_free_limit as RabbitMQ does: bytes with units, or relative to the memory', async () => {
    const limit = async (line: string): Promise<number | undefined> => {
      const options = await withConfig(await conf(line));
      return options === 'help' ? undefined : options.diskFreeLimitBytes;
    };
    expect(await limit('disk_free_limit.absolute = 1000000000')).toBe(1_000_000_000);
    expect(await limit('disk_free_limit.absolute = 512MiB')).toBe(512 * 1024 * 1024);
    expect(await limit('disk_free_limit.absolute = 3G')).toBe(3_000_000_000);
    // 10 GiB of memory in these tests.
    expect(await limit('disk_free_limit.relative = 1.5')).toBe(15 * GIB);
    expect(await limit('data_dir = /tmp/x')).toBe(50_000_000);
    expect(await configError('disk_free_limit.absolute = 2 parsecs')).toMatch(
      /^FILE:1: disk_free_limit\.absolute = 2 parsecs: '2 parsecs' is not a disk free limit: expected bytes with an optional unit .*\(expected bytes with an optional unit: 50MB/,
    );
    expect(await configError('disk_free_limit.relative = lots')).toMatch(
      /^FILE:1: disk_free_limit\.relative = lots: .*the factor of mem_relative must be a number above 0/,
    );
    expect(await configError('disk_free_limit.absolute = 1GB', 'disk_free_limit.relative = 1.0')).toBe(
      'FILE:2: disk_free_limit.relative sets what disk_free_limit.absolute (line 1) sets; set one of them',
    );
  });

  it('refuses a line without =, an empty value, and a key set twice', async () => {
    expect(await configError('listeners.port 5690')).toBe(
      "FILE:1: expected 'key = value', got 'listeners.port 5690'",
    );
    expect(await configError('listeners.port =')).toBe(
      'FILE:1: listeners.port needs a value: a port number, 0-65535, or none (no plain listener: TLS only)',
    );
    expect(await configError('listeners.port = 1', '', 'listeners.port = 2')).toBe(
      'FILE:3: listeners.port is set again (first on line 1); set it once',
    );
  });

  it('says when the file cannot be read', async () => {
    await expect(withConfig(join(dir, 'missing.conf'))).rejects.toThrow(
      /^cannot read the config file .*missing\.conf: ENOENT/,
    );
  });
});
