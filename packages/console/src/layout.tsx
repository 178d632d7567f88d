import type { ComponentChildren } from 'preact';
import { useBrand } from './brand.ts';

export interface NavItem {
  href: string;
  label: string;
  current: boolean;
}

/** The frame of a signed-in page: the brand, the view's sections and sign-out. */
export function Layout({ title, nav, onSignOut, children }: { title: string; nav: NavItem[]; onSignOut: () => void; children: ComponentChildren }) {
  const { brand } = useBrand();
  return (
    <>
      <header class="top">
        <span class="brand">
          {brand.logo_url && <img src={brand.logo_url} alt="" class="logo" referrerPolicy="no-referrer" />}
          <span data-brand-name>{brand.brand_name ?? 'Sightline'}</span>
        </span>
        <nav aria-label="Sections">
          {nav.map((n) => (
            <a key={n.href} href={n.href} aria-current={n.current ? 'page' : undefined}>
              {n.label}
            </a>
          ))}
        </nav>
        <button type="button" class="signout" onClick={onSignOut}>
          Sign out
        </button>
      </header>
      <main>
        <h1>{title}</h1>
        {children}
      </main>
    </>
  );
}
