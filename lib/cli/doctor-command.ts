import { defineCommand } from './command.js';
import { doctorReport } from './doctor-report.js';
import { formatDoctorReport } from './format-doctor-report.js';

export const doctorCommand = defineCommand(
  {
    name: 'doctor',
    brief: 'Report what rxccl finds on this host (kernels, data plane, network)',
    synopsis: '[--json]',
    summary: [
      'Reports what a job started here would find, each fact asked of the system: the version and',
      'Node.js, whether the native kernels load (which file: built here or prebuilt) and the SIMD',
      'they run, the result pool, whether the native data plane and single copy may run (Yama,',
      'seccomp, GX1_SINGLE_COPY), the network interfaces and the one a job would use, the rails',
      'and peer addresses, and the GX1_*/RXCCL_* variables set (secrets masked). Exits 1, naming',
      'why, where the native kernels do not load.',
    ].join('\n'),
    flags: {
      json: { kind: 'boolean', help: 'print the report as one JSON object (keys: docs/launch.md)' },
    },
  },
  async (values) => {
    const report = await doctorReport();
    process.stdout.write(values.json === true ? `${JSON.stringify(report, null, 2)}\n` : formatDoctorReport(report));
    if (report.kernels.native) return 0;
    process.stderr.write(`rxccl doctor: the native kernels do not load: ${report.kernels.error}\n`);
    return 1;
  },
);
