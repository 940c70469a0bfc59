import fc from 'fast-check';
import { arbRailEndpoints } from '../../lib/testing/arbitraries/endpoints.js';
import { connect, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ConfigurationError } from '../../lib/errors.js';
import {
  bindPeerListeners,
  formatEndpoint,
  formatEndpointTable,
  formatRankEndpoints,
  parseEndpointTable,
  parseIpAddress,
  parseRailIpAddresses,
  parseRailSocketAddresses,
  parseRankEndpoints,
  parseSocketAddress,
  peerEndpointConfigurationFromEnvironment,
  readEndpointTable,
  readRankPublication,
  type SocketAddressText,
  validatePeerEndpointConfiguration,
} from '../../lib/transport/peer-endpoint-config.js';
import { readSettings } from '../../lib/settings/read-settings.js';
import { peerEndpointVariables } from '../../lib/settings/setting-parts.js';

const opened: Server[] = [];

afterEach(async () => {
  await Promise.all(opened.splice(0).map((server) => new Promise<void>((done) => server.close(() => done()))));
});

function closeOnExit(servers: Server[]): Server[] {
  opened.push(...servers);
  return servers;
}

describe('socket and IP address parsing', () => {
  it('reads IPv4 and bracketed IPv6 socket addresses, trimmed, IPv6 canonical', () => {
    expect(parseSocketAddress('X', ' 10.1.2.3:8080 ')).toEqual({ host: '10.1.2.3', port: 8080 });
    expect(parseSocketAddress('X', '[::1]:0')).toEqual({ host: '::1', port: 0 });
    expect(parseSocketAddress('X', '[2001:DB8:0:0::1]:65535')).toEqual({ host: '2001:db8::1', port: 65535 });
    expect(parseSocketAddress('X', '[fe80::1%eth0]:7')).toEqual({ host: 'fe80::1%eth0', port: 7 });
  });

  it('rejects what is no IP socket address, naming the variable and value', () => {
    for (const value of ['localhost:80', '::1:80', '[127.0.0.1]:80', '1.2.3.4', '1.2.3.4:65536', '1.2.3.04:1', '[::1]:', '']) {
      expect(() => parseSocketAddress('GX1_P2P_LISTEN_ADDR', value)).toThrow(
        `GX1_P2P_LISTEN_ADDR must be a socket address, got ${JSON.stringify(value)}: invalid socket address syntax`,
      );
    }
  });

  it('reads IP addresses', () => {
    expect(parseIpAddress('X', ' 127.0.0.2')).toBe('127.0.0.2');
    expect(parseIpAddress('X', '0:0::0')).toBe('::');
    expect(() => parseIpAddress('GX1_P2P_ADVERTISE_ADDR', 'host.example')).toThrow(
      'GX1_P2P_ADVERTISE_ADDR must be an IP address, got "host.example": invalid IP address syntax',
    );
    expect(() => parseIpAddress('X', '[::1]')).toThrow(ConfigurationError);
  });
});

describe('peer rail address configuration', () => {
  it('requires one address per rail (the reference test)', () => {
    const listen = parseRailSocketAddresses('GX1_P2P_RAIL_LISTEN_ADDRS', '127.0.0.1:0, 127.0.0.2:0', 2);
    expect(listen).toHaveLength(2);
    expect(listen[0]!.host).toBe('127.0.0.1');
    expect(listen[1]!.host).toBe('127.0.0.2');

    const advertise = parseRailIpAddresses('GX1_P2P_RAIL_ADVERTISE_ADDRS', '127.0.0.1,127.0.0.2', 2);
    expect(advertise).toHaveLength(2);
    expect(() => parseRailSocketAddresses('GX1_P2P_RAIL_LISTEN_ADDRS', '127.0.0.1:0', 2)).toThrow(/expected 2/);
    expect(() => parseRailIpAddresses('GX1_P2P_RAIL_ADVERTISE_ADDRS', '127.0.0.1,not-an-ip', 2)).toThrow(/rail 1/);
  });

  it('names the count and the rail in its messages', () => {
    expect(() => parseRailSocketAddresses('GX1_P2P_RAIL_LISTEN_ADDRS', '127.0.0.1:0', 2)).toThrow(
      'GX1_P2P_RAIL_LISTEN_ADDRS contains 1 addresses, expected 2',
    );
    expect(() => parseRailIpAddresses('GX1_P2P_RAIL_ADVERTISE_ADDRS', '127.0.0.1,not-an-ip', 2)).toThrow(
      'GX1_P2P_RAIL_ADVERTISE_ADDRS must be an IP address, got "not-an-ip": invalid IP address syntax (rail 1)',
    );
  });

  it('binds dedicated listeners (the reference test)', async () => {
    const configuration = {
      listenAddresses: [
        parseSocketAddress('X', '127.0.0.1:0'),
        parseSocketAddress('X', '127.0.0.2:0'),
      ],
      advertiseAddresses: ['127.0.0.1', '127.0.0.2'],
    };
    const { servers, endpoints } = await bindPeerListeners(configuration, 2, () => {});
    closeOnExit(servers);
    expect(servers).toHaveLength(2);
    expect(endpoints).toHaveLength(2);
    expect(endpoints[0]!.host).toBe('127.0.0.1');
    expect(endpoints[1]!.host).toBe('127.0.0.2');
    expect(endpoints[0]!.port).not.toBe(0);
    expect(endpoints[1]!.port).not.toBe(0);
  });

  it('hands each accepted connection to the handler with its rail, null for a shared listener', async () => {
    const accepted: (number | null)[] = [];
    const handler = (rail: number | null, socket: Socket): void => {
      accepted.push(rail);
      socket.destroy();
    };
    const dedicated = await bindPeerListeners(
      { listenAddresses: [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.2', port: 0 }], advertiseAddresses: [] },
      2,
      handler,
    );
    closeOnExit(dedicated.servers);
    const shared = await bindPeerListeners({ listenAddresses: [{ host: '127.0.0.1', port: 0 }], advertiseAddresses: [] }, 3, handler);
    closeOnExit(shared.servers);
    expect(shared.servers).toHaveLength(1);
    expect(new Set(shared.endpoints.map(formatEndpoint)).size).toBe(1);
    expect(shared.endpoints).toHaveLength(3);

    // Dial the moment the endpoints are known: the handler is already in place.
    const dial = (endpoint: SocketAddressText) =>
      new Promise<void>((resolve, reject) => {
        const socket = connect(endpoint.port, endpoint.host);
        socket.on('error', reject).on('close', () => resolve());
        socket.resume();
      });
    await dial(dedicated.endpoints[1]!);
    await dial(dedicated.endpoints[0]!);
    await dial(shared.endpoints[2]!);
    expect(accepted).toEqual([1, 0, null]);
  });

  it('advertises the bound address when nothing else is configured, a shared address otherwise', async () => {
    const bound = await bindPeerListeners({ listenAddresses: [{ host: '127.0.0.1', port: 0 }], advertiseAddresses: [] }, 2, () => {});
    closeOnExit(bound.servers);
    expect(bound.endpoints.map((endpoint) => endpoint.host)).toEqual(['127.0.0.1', '127.0.0.1']);
    const advertised = await bindPeerListeners(
      { listenAddresses: [{ host: '127.0.0.1', port: 0 }, { host: '127.0.0.2', port: 0 }], advertiseAddresses: ['10.9.8.7'] },
      2,
      () => {},
    );
    closeOnExit(advertised.servers);
    expect(advertised.endpoints.map((endpoint) => endpoint.host)).toEqual(['10.9.8.7', '10.9.8.7']);
    expect(advertised.endpoints.map((endpoint) => endpoint.port)).toEqual(
      advertised.servers.map((server) => (server.address() as { port: number }).port),
    );
  });

  it('reports a failed bind with the listener and address, closing the listeners already bound', async () => {
    const first = await bindPeerListeners({ listenAddresses: [{ host: '127.0.0.1', port: 0 }], advertiseAddresses: [] }, 1, () => {});
    closeOnExit(first.servers);
    const taken = first.endpoints[0]!;
    const attempt = bindPeerListeners(
      { listenAddresses: [{ host: '127.0.0.2', port: 0 }, taken], advertiseAddresses: [] },
      2,
      () => {},
    );
    await expect(attempt).rejects.toThrow(
      new RegExp(`^cannot bind direct peer listener 1 to 127\\.0\\.0\\.1:${taken.port}: .*EADDRINUSE`),
    );
  });

  it('validates list lengths against the rail count', () => {
    const one = [{ host: '0.0.0.0', port: 0 }];
    expect(() => validatePeerEndpointConfiguration({ listenAddresses: [...one, ...one], advertiseAddresses: [] }, 3)).toThrow(
      'direct peer listen configuration contains 2 addresses, expected one shared address or 3 rail addresses',
    );
    expect(() =>
      validatePeerEndpointConfiguration({ listenAddresses: one, advertiseAddresses: ['1.2.3.4', '1.2.3.5'] }, 3),
    ).toThrow(
      'direct peer advertise configuration contains 2 addresses, expected zero, one shared address, or 3 rail addresses',
    );
    expect(() => validatePeerEndpointConfiguration({ listenAddresses: one, advertiseAddresses: [] }, 65)).toThrow(
      'point-to-point rail count 65 is outside 1..=64',
    );
  });
});

describe('peer endpoint configuration from the environment', () => {
  it("listens on the job's interface (the control connection's local address), port 0, by default", () => {
    expect(peerEndpointConfigurationFromEnvironment({ variables: peerEndpointVariables(readSettings({})), rails: 2, jobInterface: '127.0.0.1' })).toEqual({
      listenAddresses: [{ host: '127.0.0.1', port: 0 }],
      advertiseAddresses: [],
    });
    expect(peerEndpointConfigurationFromEnvironment({ variables: peerEndpointVariables(readSettings({})), rails: 1, jobInterface: '0:0:0:0:0:0:0:1' }).listenAddresses).toEqual([{ host: '::1', port: 0 }]);
    // Every interface only when configured so.
    expect(peerEndpointConfigurationFromEnvironment({ variables: peerEndpointVariables(readSettings({ GX1_P2P_LISTEN_ADDR: '0.0.0.0:0' })), rails: 1, jobInterface: '10.0.0.5' }).listenAddresses).toEqual([
      { host: '0.0.0.0', port: 0 },
    ]);
  });

  it('prefers the per-rail variables over the shared ones', () => {
    const env = {
      GX1_P2P_LISTEN_ADDR: '127.0.0.1:5000',
      GX1_P2P_RAIL_LISTEN_ADDRS: '127.0.0.1:0,127.0.0.2:0',
      GX1_P2P_ADVERTISE_ADDR: '10.0.0.1',
      GX1_P2P_RAIL_ADVERTISE_ADDRS: '10.0.0.1,10.1.0.1',
    };
    expect(peerEndpointConfigurationFromEnvironment({ variables: peerEndpointVariables(readSettings(env)), rails: 2, jobInterface: '127.0.0.1' })).toEqual({
      listenAddresses: [
        { host: '127.0.0.1', port: 0 },
        { host: '127.0.0.2', port: 0 },
      ],
      advertiseAddresses: ['10.0.0.1', '10.1.0.1'],
    });
    const shared = { GX1_P2P_LISTEN_ADDR: '[::1]:5000', GX1_P2P_ADVERTISE_ADDR: '::1' };
    expect(peerEndpointConfigurationFromEnvironment({ variables: peerEndpointVariables(readSettings(shared)), rails: 4, jobInterface: '127.0.0.1' })).toEqual({
      listenAddresses: [{ host: '::1', port: 5000 }],
      advertiseAddresses: ['::1'],
    });
  });

  it('names the variable that is wrong', () => {
    const options = { rails: 2, jobInterface: '127.0.0.1' } as const;
    expect(() => peerEndpointConfigurationFromEnvironment({ ...options, variables: peerEndpointVariables(readSettings({ GX1_P2P_LISTEN_ADDR: '' })) })).toThrow(
      'GX1_P2P_LISTEN_ADDR must be a socket address, got "": invalid socket address syntax',
    );
    expect(() =>
      peerEndpointConfigurationFromEnvironment({ ...options, variables: peerEndpointVariables(readSettings({ GX1_P2P_RAIL_ADVERTISE_ADDRS: '1.1.1.1' })) }),
    ).toThrow('GX1_P2P_RAIL_ADVERTISE_ADDRS contains 1 addresses, expected 2');
    expect(() => peerEndpointConfigurationFromEnvironment({ ...options, rails: 0, variables: peerEndpointVariables(readSettings({})) })).toThrow(
      'point-to-point rail count 0 is outside 1..=64',
    );
  });
});

/** A world's endpoint table: per rank either one endpoint for every rail or one per rail. */
const arbTable = fc
  .record({ worldSize: fc.integer({ min: 1, max: 6 }), rails: fc.integer({ min: 1, max: 4 }) })
  .chain(({ worldSize, rails }) =>
    fc.record({
      worldSize: fc.constant(worldSize),
      rails: fc.constant(rails),
      table: fc.array(arbRailEndpoints(rails), { minLength: worldSize, maxLength: worldSize }),
    }),
  );

describe('direct peer endpoint tables', () => {
  it('format IPv6 endpoints in brackets', () => {
    expect(formatEndpoint({ host: '::1', port: 9 })).toBe('[::1]:9');
    expect(formatEndpoint({ host: '127.0.0.1', port: 9 })).toBe('127.0.0.1:9');
  });

  it('round-trip in either layout', () => {
    fc.assert(
      fc.property(arbTable, ({ worldSize, rails, table }) => {
        const text = formatEndpointTable(table);
        expect(parseEndpointTable(text, worldSize, rails)).toEqual(table);
        const compact = table.every((endpoints) => endpoints.every((endpoint) => formatEndpoint(endpoint) === formatEndpoint(endpoints[0]!)));
        expect(text.split('\n')).toHaveLength(compact ? worldSize : worldSize * rails);
      }),
    );
  });

  it('keep the one-line-per-rank layout while every rank shares one endpoint', () => {
    const table = [
      [
        { host: '10.0.0.1', port: 1 },
        { host: '10.0.0.1', port: 1 },
      ],
      [
        { host: '::1', port: 2 },
        { host: '::1', port: 2 },
      ],
    ];
    expect(formatEndpointTable(table)).toBe('10.0.0.1:1\n[::1]:2');
    const mixed = [table[0]!, [{ host: '::1', port: 2 }, { host: '::1', port: 3 }]];
    expect(formatEndpointTable(mixed)).toBe('10.0.0.1:1\n10.0.0.1:1\n[::1]:2\n[::1]:3');
    expect(parseEndpointTable('10.0.0.1:1\r\n[::1]:2\n', 2, 2)).toEqual(table);
  });

  it('reject a table of the wrong size or with a bad entry, as the reference words it', () => {
    expect(() => parseEndpointTable('10.0.0.1:1\n10.0.0.1:2\n10.0.0.1:3', 2, 2)).toThrow(
      'coordinator returned 3 direct peer endpoints, expected 2 shared endpoints or 4 rail endpoints',
    );
    expect(() => parseEndpointTable('', 1, 1)).toThrow(
      'coordinator returned 0 direct peer endpoints, expected 1 shared endpoints or 1 rail endpoints',
    );
    expect(() => parseEndpointTable('10.0.0.1:1\nnope', 2, 1)).toThrow(
      'direct peer endpoint "nope" is invalid: invalid socket address syntax',
    );
  });

  it('publish a rank’s endpoints in one line when shared, and read them as the coordinator does', () => {
    const shared = [
      { host: '0.0.0.0', port: 4000 },
      { host: '0.0.0.0', port: 4000 },
    ];
    expect(formatRankEndpoints(shared)).toBe('0.0.0.0:4000');
    expect(parseRankEndpoints('0.0.0.0:4000', 3, 2, '10.0.0.7')).toEqual([
      { host: '10.0.0.7', port: 4000 },
      { host: '10.0.0.7', port: 4000 },
    ]);
    const perRail = [
      { host: '10.0.0.7', port: 4000 },
      { host: '::', port: 4001 },
    ];
    expect(formatRankEndpoints(perRail)).toBe('10.0.0.7:4000\n[::]:4001');
    expect(parseRankEndpoints(formatRankEndpoints(perRail), 3, 2, '::ffff:10.0.0.7')).toEqual([
      { host: '10.0.0.7', port: 4000 },
      { host: '::ffff:10.0.0.7', port: 4001 },
    ]);
    expect(() => parseRankEndpoints('1.1.1.1:1\n1.1.1.1:2', 3, 3, '1.1.1.1')).toThrow(
      'rank 3 published 2 direct peer endpoints, expected one shared endpoint or 3 rail endpoints',
    );
    expect(() => parseRankEndpoints('1.1.1.1:1\n1.1.1.1:0', 1, 2, '1.1.1.1')).toThrow(
      'rank 1 direct peer endpoint for rail 1 uses port zero',
    );
    expect(() => parseRankEndpoints('x', 1, 1, '1.1.1.1')).toThrow(
      'rank 1 direct peer endpoint "x" for rail 0 is invalid: invalid socket address syntax',
    );
  });

  it('carry each rank’s data-plane offer on its first line, through the coordinator’s table, in both layouts; a publication without one offers nothing', () => {
    const shared = [{ host: '10.0.0.1', port: 1 }, { host: '10.0.0.1', port: 1 }];
    const perRail = [{ host: '10.0.0.2', port: 2 }, { host: '10.0.0.2', port: 3 }];
    expect(formatRankEndpoints(shared, 'auto')).toBe('10.0.0.1:1 data-plane=auto');
    expect(formatRankEndpoints(perRail, 'native')).toBe('10.0.0.2:2 data-plane=native\n10.0.0.2:3');
    expect(readRankPublication('10.0.0.1:1 data-plane=auto', 0, 2, '10.0.0.1')).toEqual({ endpoints: shared, dataPlane: 'auto' });
    // What another implementation written before offers existed publishes: nothing offered.
    expect(readRankPublication('10.0.0.1:1', 0, 2, '10.0.0.1')).toEqual({ endpoints: shared, dataPlane: null });
    const compact = formatEndpointTable([{ endpoints: shared, dataPlane: 'auto' }, { endpoints: shared, dataPlane: null }]);
    expect(compact).toBe('10.0.0.1:1 data-plane=auto\n10.0.0.1:1');
    expect(readEndpointTable(compact, 2, 2)).toEqual({ endpoints: [shared, shared], dataPlanes: ['auto', null], choices: [undefined, undefined] });
    const full = formatEndpointTable([{ endpoints: shared, dataPlane: null }, { endpoints: perRail, dataPlane: 'native' }]);
    expect(full).toBe('10.0.0.1:1\n10.0.0.1:1\n10.0.0.2:2 data-plane=native\n10.0.0.2:3');
    expect(readEndpointTable(full, 2, 2)).toEqual({ endpoints: [shared, perRail], dataPlanes: [null, 'native'], choices: [undefined, undefined] });
    // Only a rank's first line may offer, one offer, of a known kind.
    expect(() => readRankPublication('10.0.0.2:2\n10.0.0.2:3 data-plane=auto', 1, 2, '10.0.0.2')).toThrow(
      'rank 1 direct peer endpoint line "10.0.0.2:3 data-plane=auto" has an attribute it cannot carry: "data-plane=auto" (only a rank\'s first line may carry data-plane=auto or data-plane=native, then choice=...)',
    );
    expect(() => readRankPublication('10.0.0.2:2 data-plane=fast', 1, 1, '10.0.0.2')).toThrow(/has an attribute it cannot carry: "data-plane=fast"/);
    expect(() => readRankPublication('10.0.0.2:2 data-plane=auto data-plane=auto', 1, 1, '10.0.0.2')).toThrow(/cannot carry/);
    expect(() => readEndpointTable('10.0.0.1:1 colour=blue', 1, 1)).toThrow(/has an attribute it cannot carry: "colour=blue"/);
  });
});
