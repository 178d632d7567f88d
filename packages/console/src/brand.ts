import { createContext } from 'preact';
import { useContext, useLayoutEffect } from 'preact/hooks';
import { call } from './api.ts';
import { useLoad } from './route.ts';

/** The white-label brand the key's console shows (console-brand); all null: Sightline's own. */
export interface Brand {
  brand_name: string | null;
  accent_color: string | null;
  logo_url: string | null;
}

const NO_BRAND: Brand = { brand_name: null, accent_color: null, logo_url: null };

export const BrandContext = createContext<{ brand: Brand; reload: () => void }>({ brand: NO_BRAND, reload: () => {} });

export const useBrand = () => useContext(BrandContext);

/**
 * Reads the key's brand and applies its accent. The colour is set through the CSSOM (a custom
 * property on the root), which the CSP allows: no inline style is written. A layout effect, so the
 * colour lands in the same commit as the name: no frame shows the brand's name in another accent.
 */
export function useLoadedBrand(apiKey: string): { brand: Brand; reload: () => void } {
  const { data, reload } = useLoad(() => call<{ brand: Brand }>(apiKey, 'console-brand'), [apiKey]);
  const brand = data?.brand ?? NO_BRAND;
  useLayoutEffect(() => {
    const root = document.documentElement.style;
    if (brand.accent_color) root.setProperty('--accent', brand.accent_color);
    else root.removeProperty('--accent');
    document.title = brand.brand_name ?? 'Sightline console';
    return () => root.removeProperty('--accent');
  }, [brand.accent_color, brand.brand_name]);
  return { brand, reload };
}
