-- A partner's white-label brand for the console: the name, accent colour and logo its children's
-- customers see instead of Sightline's (partner-set-brand; read with console-brand). All null is
-- no brand. The logo is an https URL the browser loads itself (the console's CSP allows https
-- images and nothing else from elsewhere); the accent is a lower-case #rrggbb colour.
alter table accounts
  add column brand_name text check (brand_name is null or length(brand_name) between 1 and 200),
  add column brand_accent text check (brand_accent is null or brand_accent ~ '^#[0-9a-f]{6}$'),
  add column brand_logo_url text check (brand_logo_url is null or (length(brand_logo_url) <= 2048 and brand_logo_url ~ '^https://[^\s/?#]+'));
