/**
 * Layering of src/ (run: npm run depcheck). Dependencies point one way:
 *   composition root (app.ts, compose.ts, server.ts, cli/) -> features/* -> web (page frame pieces) ->
 *   {http, auth, limits, storage, db, observability, infra, errors} + deps.ts (types) + config.ts -> util
 * Among features, the pages shell (features/pages) renders the others' declared `ui` and is
 * imported by none of them: what their pages share lives in web/.
 * Type-only imports count too (tsPreCompilationDeps), so a cycle through `import type` fails.
 */
const ROOT = '^src/(app|compose|server)\\.ts$|^src/cli/'

module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment: 'No import cycles, type-only ones included.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'features-only-from-root',
      severity: 'error',
      comment: 'Only the composition root (app.ts, compose.ts, server.ts, cli/) and features themselves import features/.',
      from: { path: '^src/', pathNot: `${ROOT}|^src/features/` },
      to: { path: '^src/features/' },
    },
    {
      name: 'root-not-imported-below',
      severity: 'error',
      comment: 'Nothing below the composition root imports it (features and layers get what they need passed in).',
      from: { path: '^src/', pathNot: ROOT },
      to: { path: ROOT },
    },
    {
      name: 'util-imports-only-util',
      severity: 'error',
      comment: 'src/util/ is the bottom layer: it imports nothing else from src/.',
      from: { path: '^src/util/' },
      to: { path: '^src/', pathNot: '^src/util/' },
    },
    {
      name: 'layers-without-metrics',
      severity: 'error',
      comment:
        'db/, infra/, limits/, storage/ and auth/ take observers from the composition root instead of importing metrics (admin commands must not load prom-client).',
      from: { path: '^src/(db|infra|limits|storage|auth)/' },
      to: { path: '^src/observability/' },
    },
    {
      name: 'pages-shell-not-imported-by-features',
      severity: 'error',
      comment:
        "A feature declares its pages in its Feature's `ui` and builds them from src/web/; it never imports the pages shell (features/pages), so the shell depends on the features' declarations and not the reverse.",
      from: { path: '^src/features/', pathNot: '^src/features/(pages/|index\\.ts$)' },
      to: { path: '^src/features/pages/' },
    },
    {
      name: 'web-not-imported-below',
      severity: 'error',
      comment: 'src/web/ (page templates, messages, page types) sits between features and the layers below; those layers do not import it.',
      from: { path: '^src/(http|db|infra|limits|storage|auth|observability|errors|util)/|^src/(config|deps)\\.ts$' },
      to: { path: '^src/web/' },
    },
    {
      name: 'http-not-imported-below',
      severity: 'error',
      comment: 'The layers under http/ (and config.ts) do not import it.',
      from: { path: '^src/(db|infra|limits|storage|auth|observability|errors|util)/|^src/config\\.ts$' },
      to: { path: '^src/http/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    exclude: { path: '^dist/' },
    // TypeScript 7 has no JS API for dependency-cruiser's tsc parser; swc keeps `import type`
    // declarations, so type-only edges are cruised (and checked for cycles) too
    parser: 'swc',
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: {
      exportsFields: ['exports'],
      conditionNames: ['import', 'require', 'node', 'default', 'types'],
      extensions: ['.ts', '.js', '.mjs', '.cjs', '.d.ts'],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
}
