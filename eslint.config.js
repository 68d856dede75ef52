// One lint setup for the whole package: typescript-eslint's type-aware recommended rules.
import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.cache/', '.blockfeed/', 'charts/', 'coverage/'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['eslint.config.js', '.dependency-cruiser.js'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/require-await': 'off',
      'no-constant-condition': ['error', { checkLoops: false }],
    },
  },
  {
    // The website's one script runs in browsers, as plain JavaScript outside the TypeScript project.
    files: ['api-server/website/static/**/*.js'],
    ...tseslint.configs.disableTypeChecked,
    languageOptions: {
      parserOptions: { projectService: false, project: false, program: null },
      sourceType: 'script',
      globals: { document: 'readonly', navigator: 'readonly', window: 'readonly', setTimeout: 'readonly' },
    },
  },
);
