import { describe, expect, it } from 'vitest';
import { expandHostList } from '../../lib/launch/slurm-host-list.js';

describe('expandHostList (Slurm host lists)', () => {
  it.each([
    ['node01', ['node01']],
    ['node[01-03,07]', ['node01', 'node02', 'node03', 'node07']],
    ['node[01-03,07],gpu5', ['node01', 'node02', 'node03', 'node07', 'gpu5']],
    ['a[8-11]', ['a8', 'a9', 'a10', 'a11']],
    ['n[098-101]', ['n098', 'n099', 'n100', 'n101']],
    ['rack[1-2]-n[1-2]', ['rack1-n1', 'rack1-n2', 'rack2-n1', 'rack2-n2']],
    ['x[3],y', ['x3', 'y']],
    ['cn-[1-2].cluster', ['cn-1.cluster', 'cn-2.cluster']],
  ])('%s', (list, hosts) => {
    expect(expandHostList(list)).toEqual(hosts);
  });

  it.each([
    ['node[01-03', /unbalanced brackets/],
    ['node01]', /unbalanced brackets/],
    ['node[[1]]', /unbalanced brackets/],
    ['node[a-b]', /bad range "a-b"/],
    ['node[5-3]', /range 5-3 runs backwards/],
    ['node1,,node2', /empty host name/],
  ])('rejects %s naming the variable', (list, why) => {
    expect(() => expandHostList(list, 'SLURM_JOB_NODELIST')).toThrow(why);
    expect(() => expandHostList(list, 'SLURM_JOB_NODELIST')).toThrow(`SLURM_JOB_NODELIST ${JSON.stringify(list)} is not a Slurm host list`);
  });
});
