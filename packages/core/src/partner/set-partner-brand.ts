import { z } from '@hono/zod-openapi';
import type { PartnerCtx, VerbArgs } from '../kernel/context.ts';
import { sqlCall } from '../kernel/errors.ts';

/** WCAG 2 relative luminance of a #rrggbb colour. */
function luminance(hex: string): number {
  const channel = (i: number) => {
    const c = Number.parseInt(hex.slice(i, i + 2), 16) / 255;
    return c <= 0.04045 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5);
}

/**
 * The console writes white on the accent (buttons) and the accent on white (links, focus rings):
 * an accent must keep WCAG AA's 4.5:1 against white, or a partner's brand would make its own
 * customers' console unreadable.
 */
export const MIN_ACCENT_CONTRAST = 4.5;
const contrastWithWhite = (hex: string) => 1.05 / (luminance(hex) + 0.05);

export const Brand = z
  .object({
    brand_name: z.string().min(1).max(200).nullable().openapi({ description: 'The name shown instead of Sightline’s' }),
    accent_color: z
      .string()
      .regex(/^#[0-9a-f]{6}$/, 'must be a lower-case colour like #0a58ca')
      .refine(
        (hex) => contrastWithWhite(hex) >= MIN_ACCENT_CONTRAST,
        `must be dark enough to read on white and under white text (a contrast of at least ${MIN_ACCENT_CONTRAST}:1)`,
      )
      .nullable()
      .openapi({ description: 'A #rrggbb colour for links and buttons' }),
    logo_url: z
      .string()
      .max(2048)
      .regex(/^https:\/\/[^\s/?#]+/, 'must be an https URL')
      .nullable()
      .openapi({ description: 'An https URL of the logo image' }),
  })
  .openapi('Brand');
export type Brand = z.infer<typeof Brand>;

export const SetPartnerBrandInput = Brand.partial().strict().openapi('SetBrandRequest');
export type SetPartnerBrandInput = z.infer<typeof SetPartnerBrandInput>;

export const PartnerBrand = z.object({ brand: Brand });
export type PartnerBrand = z.infer<typeof PartnerBrand>;

/**
 * partner-set-brand: the partner's white-label brand for the console. A field given is set (null
 * clears it); a field omitted stays. The account's CHECKs hold the same rules as the schema.
 */
export async function setPartnerBrand({ ctx, input }: VerbArgs<SetPartnerBrandInput, PartnerCtx>): Promise<PartnerBrand> {
  const [row] = await sqlCall(
    () => ctx.db<{ brand_name: string | null; brand_accent: string | null; brand_logo_url: string | null }>`
      update accounts set
        brand_name = case when ${'brand_name' in input} then ${input.brand_name ?? null} else brand_name end,
        brand_accent = case when ${'accent_color' in input} then ${input.accent_color ?? null} else brand_accent end,
        brand_logo_url = case when ${'logo_url' in input} then ${input.logo_url ?? null} else brand_logo_url end
      where id = ${ctx.caller.accountId}
      returning brand_name, brand_accent, brand_logo_url`,
  );
  if (!row) throw new Error('the partner account is missing');
  return { brand: { brand_name: row.brand_name, accent_color: row.brand_accent, logo_url: row.brand_logo_url } };
}
