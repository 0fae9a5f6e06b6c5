// ESLint for svc (flat config). The repository root's eslint.config.js re-exports this file;
// it lives here so that 'typescript-eslint' resolves from this workspace, which has the
// TypeScript 6 API that typescript-eslint needs (see package.json beside this file).
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import js from '@eslint/js'
import globals from 'globals'
import tseslint from 'typescript-eslint'

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..')

export default tseslint.config(
  {
    ignores: [
      'dist/**',
      'node_modules/**',
      'tools/lint/node_modules/**',
      'native/*/build/**',
      'data/**',
      'test-output/**',
      'bench/results/**',
      'test/fixtures/**',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      ecmaVersion: 2022,
      sourceType: 'module',
      globals: { ...globals.node },
      parserOptions: {
        // TypeScript files get their types from tsconfig.json; the .mjs scripts from a default project
        projectService: {
          allowDefaultProject: ['scripts/*.mjs', 'bench/*.mjs', 'bench/lib/*.mjs', 'tools/lint/*.js', 'eslint.config.js'],
          defaultProject: 'tsconfig.json',
          // the .mjs scripts and benchmarks above are more than the default 8 (17 of them, with room)
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 24,
        },
        tsconfigRootDir: root,
      },
    },
    linterOptions: { reportUnusedDisableDirectives: 'error' },
    rules: {
      // the two rules this config exists for
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test's describe/it return promises that the runner itself awaits
          allowForKnownSafeCalls: [
            { from: 'package', package: 'node:test', name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'] },
          ],
        },
      ],
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: true }],

      // Off: `any` is used on purpose at the edges (parsed JSON bodies in tests, Kysely<any> in
      // the migrations, driver and SDK results); these rules flag every use of such a value
      // (about 1,500 reports), and typing them all would be a large rewrite of its own.
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      // Off: async methods without await implement Promise-returning interfaces (the in-memory
      // LimitStore and Bus, BlobStore.close...), where a throw must become a rejection.
      '@typescript-eslint/require-await': 'off',
      // Off: the compiler's noUnusedLocals / noUnusedParameters already check this (same `_` rule).
      '@typescript-eslint/no-unused-vars': 'off',
      // Off: validation regexes match control characters (\x00-\x1f) on purpose, to refuse them.
      'no-control-regex': 'off',
      // `catch {}` is the codebase's way to say "ignore this failure" (e.g. optional JSON parsing)
      'no-empty': ['error', { allowEmptyCatch: true }],
      // passing on a caught error (typed unknown) is fine
      '@typescript-eslint/prefer-promise-reject-errors': ['error', { allowThrowingUnknown: true }],
    },
  },
  {
    // the .mjs scripts have no annotations, so their inferred types are too loose for these
    files: ['**/*.mjs'],
    rules: {
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/restrict-plus-operands': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
    },
  },
  {
    // the pages' browser scripts (each feature's static/): plain scripts (no modules, no build step), no type information
    files: ['src/features/*/static/**/*.js', 'src/features/*/static/**/*.d.ts'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: { ...tseslint.configs.disableTypeChecked.languageOptions, sourceType: 'script', globals: { ...globals.browser } },
  },
)
