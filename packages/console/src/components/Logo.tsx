/**
 * Vexil's mark: a pennant on its pole (a vexillum is a flag), the drawing of `public/favicon.svg`.
 * Decorative: the brand's text names it.
 */
export function Logo() {
  return (
    <svg viewBox="0 0 32 32" width="28" height="28" aria-hidden="true" className="logo">
      <rect width="32" height="32" rx="7" fill="var(--accent-9)" />
      <path d="M10 6v21" stroke="var(--accent-contrast)" strokeWidth="2.6" strokeLinecap="round" />
      <path d="M11.5 7.5h12l-3.5 5 3.5 5h-12z" fill="var(--accent-contrast)" />
    </svg>
  );
}
