/**
 * `styx ctl`'s feature flag commands, as rabbitmqctl's (cluster/feature-flags.ts has the model), on
 * the management API's feature flag endpoints (management/feature-flags-api.ts):
 *
 *   styx ctl list_feature_flags [column ...]    name, state, and which nodes support each flag
 *   styx ctl enable_feature_flag NAME | all     after a rolling upgrade, once every node runs it
 */
import type { Column, CommandSpec } from './ctl-context.ts';
import { announce, arg, field, list, pickColumns, printList } from './ctl-context.ts';

const FLAG_COLUMNS: readonly Column[] = [
  field('name'),
  field('state'),
  field('since'),
  field('supported_by'),
  field('lacking'),
  field('desc'),
];

const DEFAULT_COLUMNS = ['name', 'state', 'supported_by', 'lacking', 'desc'];

export const FEATURE_FLAG_COMMANDS: Readonly<Record<string, CommandSpec>> = {
  list_feature_flags: {
    usage: '[column ...]',
    summary:
      'list the feature flags: enabled (in use cluster-wide), disabled (every node supports it: enable it ' +
      'with enable_feature_flag) or unavailable (a node lacks it, or is not running: lacking names them). ' +
      `Default columns: ${DEFAULT_COLUMNS.join(' ')}; columns: ${FLAG_COLUMNS.map(([n]) => n).join(', ')}`,
    min: 0,
    max: Number.POSITIVE_INFINITY,
    async run(ctx, args) {
      const columns = pickColumns(FLAG_COLUMNS, args, DEFAULT_COLUMNS);
      const rows = await list(ctx, ['feature-flags']);
      printList(ctx, 'Listing feature flags ...', rows, columns);
    },
  },
  enable_feature_flag: {
    usage: 'NAME | all',
    summary:
      'enable a feature flag cluster-wide for good, or every flag that can be with "all" (as rabbitmqctl): ' +
      'refused while a node lacks it or is not running. Take this step once every node runs the new ' +
      'version: until then a node may still be rolled back, after it no longer',
    min: 1,
    max: 1,
    async run(ctx, args) {
      const name = arg(args, 0);
      announce(
        ctx,
        name === 'all' ? 'Enabling all feature flags ...' : `Enabling feature flag "${name}" ...`,
      );
      const { enabled } = (await ctx.request('PUT', ['feature-flags', name, 'enable'])) as {
        enabled: string[];
      };
      if (ctx.json) ctx.io.stdout(`${JSON.stringify({ enabled }, null, 2)}\n`);
      else
        announce(
          ctx,
          enabled.length === 0 ? 'Nothing to enable: already enabled' : `Enabled: ${enabled.join(', ')}`,
        );
    },
  },
};
