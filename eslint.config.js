import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import tseslint from 'typescript-eslint';

export default defineConfig(
  {
    ignores: [
      '**/dist/**',
      '**/node_modules/**',
      'data/**',
      'release/**',
      'packages/console/src/api/schema.d.ts',
      // A sample application the code-reference tests scan; its imports are not installed.
      'packages/server/fixtures/**',
    ],
  },
  js.configs.recommended,
  tseslint.configs.strictTypeChecked,
  {
    languageOptions: {
      parserOptions: {
        // These JavaScript files belong to no tsconfig; each is checked on its own.
        projectService: {
          allowDefaultProject: [
            'eslint.config.js',
            'packages/server/bin/*.js',
            'packages/console/scripts/*.mjs',
            'scripts/*.mjs',
          ],
          // typescript-eslint warns past 8 (each costs a program); these few are small.
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 16,
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', ignoreRestSiblings: true },
      ],
      // Numbers and booleans print unambiguously in messages; objects and nullish values still fail.
      '@typescript-eslint/restrict-template-expressions': [
        'error',
        { allowNumber: true, allowBoolean: true },
      ],
      // An arrow whose whole body is one call (`() => resolve()`) is an idiom, not a confusion.
      '@typescript-eslint/no-confusing-void-expression': ['error', { ignoreArrowShorthand: true }],
    },
  },
  {
    // Tests keep the type-aware rules (above all no-floating-promises and no-misused-promises),
    // minus those that fight how tests are written.
    files: [
      '**/*.test.ts',
      'packages/*/src/test-support/**/*.ts',
      'packages/*/test/**/*.ts',
      'packages/console/e2e/**/*.ts',
    ],
    rules: {
      // Test bodies are parsed JSON (`any`); the assertions are what check their shape.
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/restrict-plus-operands': 'off',
      // A test that dereferences a missing value fails, which is the check it wants.
      '@typescript-eslint/no-non-null-assertion': 'off',
      // Fixtures assigned in beforeAll are typed as always set; teardown must still cope with a
      // set-up that failed half-way, so it checks them.
      '@typescript-eslint/no-unnecessary-condition': 'off',
      // Polling checks (`eventually`) and step definitions share one async signature.
      '@typescript-eslint/require-await': 'off',
      // A caught failure is rethrown as it came, so the runner reports the original.
      '@typescript-eslint/only-throw-error': 'off',
      // Step definitions name their argument types once, for the reader.
      '@typescript-eslint/no-unnecessary-type-parameters': 'off',
    },
  },
  {
    // The engine is pure: it must never reach for I/O or for the server.
    files: ['packages/engine/src/**/*.ts'],
    ignores: ['packages/engine/src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: ['node:*', 'fs', 'http', 'net', '@vexil/server', '../../server/*'] },
      ],
    },
  },
  {
    // The statistics are pure (design record 063): numbers in, numbers out, no I/O and no room above.
    files: ['packages/server/src/statistics/**/*.ts'],
    ignores: ['packages/server/src/statistics/**/*.test.ts'],
    rules: {
      'no-restricted-imports': ['error', { patterns: ['node:*', 'fs', 'http', 'net', '../*'] }],
    },
  },
);
