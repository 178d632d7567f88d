import type { Sql } from '@sightline/core';

/**
 * One identified company visitor of a website, written as the tracker worker leaves it (an
 * identified identification, and the visitor row pointing at it), for suites about who may read
 * them; how visitors come to be identified is proved in visitor-identification.test.ts.
 */
export async function seedIdentifiedVisitor(
  db: Sql,
  site: { websiteId: string; apiKeyId: string },
  ip: string,
  company = `Company at ${ip}`,
): Promise<{ identification_id: string }> {
  const [row] = await db<{ id: string }>`
    insert into identifications (website_id, ip, api_key_id, period_start, status, identified_at, identification_type,
                                 traffic_type, reason, confidence, country, domain, company_name)
    values (${site.websiteId}, ${ip}::inet, ${site.apiKeyId}, date_trunc('month', now()), 'identified', now(), 'company',
            'business', 'seeded', 0.9, 'US', 'seeded.example.com', ${company})
    returning id`;
  if (!row) throw new Error('no identification inserted');
  await db`
    insert into visitors (website_id, ip, api_key_id, first_seen, last_seen, visit_count, pages_viewed, identification_id, identified_count)
    values (${site.websiteId}, ${ip}::inet, ${site.apiKeyId}, now() - interval '1 hour', now(), 1, 1, ${row.id}, 1)`;
  return { identification_id: row.id };
}
