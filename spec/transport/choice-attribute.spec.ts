/** The `choice=` attribute of a PeerEndpoint line (docs/protocol.md 8.3): its codec, and the error two ranks' attributes give. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SettingsDifferError } from '../../lib/errors.js';
import { choiceSettingsDiffer, formatChoiceSettings, readChoiceSettings } from '../../lib/transport/choice-attribute.js';
import { formatRankEndpoints, readEndpointTable, readRankPublication } from '../../lib/transport/peer-endpoint-config.js';

const variable = fc.stringMatching(/^GX1_[A-Z0-9_]{1,20}$/);
const settings = fc.uniqueArray(fc.tuple(variable, fc.string({ unit: 'grapheme', minLength: 0, maxLength: 40 })), { selector: ([name]) => name, minLength: 1, maxLength: 14 });

describe('the choice attribute', () => {
  it('reads back what it writes, for any variables and any values; the text holds no space, newline or second attribute', () => {
    fc.assert(
      fc.property(settings, (written) => {
        const text = formatChoiceSettings(written)!;
        expect(text).not.toMatch(/[\s]/);
        expect(readChoiceSettings(text)).toEqual(written);
        // Through a publication's first line and a table, beside a data-plane offer.
        const line = formatRankEndpoints([{ host: '127.0.0.1', port: 40211 }], 'auto', text);
        expect(readRankPublication(line, 0, 1, '127.0.0.1')).toEqual({ endpoints: [{ host: '127.0.0.1', port: 40211 }], dataPlane: 'auto', choice: text });
        expect(readEndpointTable(line, 1, 1).choices).toEqual([text]);
      }),
    );
  });

  it('writes none for no settings, and the documented form for some', () => {
    expect(formatChoiceSettings([])).toBeNull();
    expect(formatChoiceSettings([['GX1_RING_CHANNELS', '4'], ['GX1_TOPOLOGY_GROUPS', '0,1;2,3']])).toBe('GX1_RING_CHANNELS:4,GX1_TOPOLOGY_GROUPS:0%2C1%3B2%2C3');
    expect(formatRankEndpoints([{ host: '127.0.0.1', port: 40211 }], null, 'GX1_RING_CHANNELS:4')).toBe('127.0.0.1:40211 choice=GX1_RING_CHANNELS:4');
  });

  it('refuses what it would not write, naming the attribute', () => {
    for (const [text, why] of [
      ['', 'they are empty'],
      ['GX1_RING_CHANNELS', '"GX1_RING_CHANNELS" is not VARIABLE:value'],
      ['ring:4', '"ring:4" is not VARIABLE:value'],
      ['GX1_A:1,GX1_A:2', 'GX1_A is given twice'],
      ['GX1_A:%E0%A4%A', "GX1_A's value is not percent-encoded UTF-8"],
      ['GX1_A:%61', "GX1_A's value is not written as encodeURIComponent writes it"],
    ] as const) {
      expect(() => readChoiceSettings(text), text).toThrow(`choice settings ${JSON.stringify(text)} cannot be read: ${why}`);
    }
    // On a line: only a rank's first, after its offer, once.
    expect(() => readRankPublication('127.0.0.1:1 choice=GX1_A:1 data-plane=auto', 0, 1, '127.0.0.1')).toThrow('has an attribute it cannot carry: "data-plane=auto"');
    expect(() => readRankPublication('127.0.0.1:1\n127.0.0.1:2 choice=GX1_A:1', 0, 2, '127.0.0.1')).toThrow('has an attribute it cannot carry: "choice=GX1_A:1"');
    expect(() => readRankPublication('127.0.0.1:1 choice=GX1_A', 0, 1, '127.0.0.1')).toThrow('choice settings "GX1_A" cannot be read');
  });

  it('two ranks\' attributes name the first variable whose values differ, a value left out as the default', () => {
    const defaults = new Map([['GX1_COLLECTIVE_ALGORITHM', 'auto'], ['GX1_RING_CHANNELS', '1']]);
    const error = choiceSettingsDiffer(0, 'GX1_RING_CHANNELS:2', 3, 'GX1_RING_CHANNELS:4', defaults);
    expect(error).toBeInstanceOf(SettingsDifferError);
    expect(error.message).toBe('GX1_RING_CHANNELS differs: rank 0 has 2, rank 3 has 4; every rank must choose collectives alike');
    expect(choiceSettingsDiffer(1, undefined, 2, 'GX1_RING_CHANNELS:2', defaults).values).toEqual(['1 (the default)', '2']);
    expect(choiceSettingsDiffer(1, 'GX1_COLLECTIVE_ALGORITHM:tree', 2, 'GX1_RING_CHANNELS:2', defaults).setting).toBe('GX1_COLLECTIVE_ALGORITHM');
    // The coordinator knows no defaults.
    expect(choiceSettingsDiffer(1, undefined, 2, 'GX1_RING_CHANNELS:2').values).toEqual(['the default', '2']);
  });
});
