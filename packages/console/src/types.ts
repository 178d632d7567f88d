/** The API answers the console reads, as docs/openapi.json states them (the fields it uses). */

export interface PoolState {
  pool: {
    monthly_id_quota: number;
    ids_used_this_period: number;
    topup_balance: number;
    available: number;
    current_period_start: string | null;
    current_period_end: string | null;
    pool_billing_mode: 'prepaid' | 'invoice_monthly';
    partner_per_id_pence: number | null;
  };
  auto_reload: {
    enabled: boolean;
    threshold_ids: number | null;
    topup_amount_ids: number | null;
    payment_method_id: string | null;
    last_declined_at: string | null;
    consecutive_declines: number;
  };
  recent_topups: { amount_ids: number; created_at: string; status: string }[];
}

export interface Child {
  child_api_key_id: string;
  child_user_id: string;
  name: string;
  domain: string | null;
  tracking_script_id: string | null;
  status: 'active' | 'suspended' | 'revoked';
  created_at: string;
  monthly_id_quota: number;
  ids_used_this_period: number;
  topup_balance: number;
  current_period_end: string | null;
  sub_status: string | null;
  has_webhook: boolean;
}

export interface ChildrenPage {
  children: Child[];
  next_offset?: number | null;
}

export interface CreatedChild {
  child: { api_key_id: string; key: string; key_prefix: string; name: string };
  website: { id: string; tracking_script_id: string; domain: string };
  webhook: { url: string | null; secret: string | null };
}

export interface UpdatedChild {
  child: { id: string; name: string; status: string; webhook_url: string | null };
  subscription: { monthly_id_quota: number; ids_used_this_period: number; topup_balance: number; current_period_end: string };
  webhook?: { url: string | null; secret: string };
}

export interface RotatedKey {
  key: string;
  key_prefix: string;
  old_key_prefix: string;
}

export interface Transferred {
  partner_topup_balance: number;
  child_topup_balance: number;
  transferred: number;
}

export interface Released {
  topup_returned: number;
}

export interface PartnerEvent {
  id: string;
  event: string;
  child_api_key_id: string | null;
  created_at: string;
  delivery_status: 'pending' | 'delivered' | 'failed' | 'no_destination';
  attempts: number;
  last_attempt_at: string | null;
  next_attempt_at: string | null;
  delivered_at: string | null;
  last_error: string | null;
  payload: { event: string; timestamp: string; data: Record<string, unknown> };
}

export interface WebhookSet {
  partner_webhook_url: string | null;
  partner_webhook_secret?: string;
  secret_unchanged: boolean;
}

export interface Visitor {
  ip: string;
  source: 'tracker' | 'api';
  identification_type: 'company' | 'individual';
  display_name: string;
  person_linkedin_url: string | null;
  person_linkedin_name: string | null;
  person_linkedin_title: string | null;
  person_linkedin_company: string | null;
  domain: string;
  company_name: string;
  company_linkedin_url: string | null;
  confidence: number;
  last_seen: string;
  first_seen: string;
  visit_count: number;
  pages_viewed: number;
  active_seconds: number;
  tracker_site: string | null;
  country: string | null;
  industry: string | null;
  employees: number | null;
  high_intent: boolean;
  raw_id: string;
  sites_visited: string[];
  is_watched: boolean;
  is_pinned: boolean;
  /** What the CRM push did (integrations): null until pushed. */
  crm_status: 'pushed' | 'failed' | null;
  crm_id: string | null;
}

export interface VisitorsPage {
  count: number;
  total: number;
  limit: number;
  offset: number;
  visitors: Visitor[];
}

export interface KeyUsage {
  metered_by: 'child_subscription' | 'partner_pool' | 'none';
  monthly_id_quota: number | null;
  pending_monthly_id_quota: number | null;
  ids_used_this_period: number | null;
  topup_balance: number | null;
  available: number | null;
  current_period_end: string | null;
}

export interface VisitorStats {
  since: string;
  until: string;
  identified_per_day: { day: string; companies: number }[];
  traffic_mix: Record<
    | 'business'
    | 'isp'
    | 'hosting'
    | 'vpn'
    | 'education'
    | 'government'
    | 'unknown'
    | 'bots'
    | 'excluded_cidr'
    | 'excluded_domain'
    | 'excluded_path'
    | 'excluded_country',
    number
  >;
}

export interface InstallCheck {
  installed: boolean;
  last_page_view_at: string | null;
  page_views_24h: number;
  bot_beacons_24h: number;
  page: {
    url: string;
    status: number | null;
    error: string | null;
    snippet_found: boolean | null;
    script_allowed: boolean | null;
    beacons_allowed: boolean | null;
  } | null;
  likely_causes: { code: string; message: string }[];
}

/** visitor-activity: a visitor's last day of pages and its ICP scores. */
export interface VisitorActivity {
  pages: { url: string; at: string }[];
  icp_scores: { icp_id: string; icp_name: string; score: number; qualified: boolean; ai_summary: string }[];
}
