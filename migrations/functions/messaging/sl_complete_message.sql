/*
 * Stores a generated message and pays for it, in one transaction: research (unless the caller gave
 * it) and message are debited as separate operations (SL402 when the balance no longer covers them:
 * nothing is stored), usage is counted, the account hears message.completed, and the response is
 * stored as the idempotency key's outcome. Returns the response body (the text answered now and on
 * every repeat) and whether a debit claimed a credit reload.
 */

/*
 * 0016's sl_complete_message, paying with the request's hold: the hold goes back to the balance
 * first (under the account's lock, kept to commit), then research and message are debited exactly
 * as before, so the transactions, usage, events and reload claims are what they always were. A
 * request whose hold is gone (expired while its worker still went on) pays from the balance: SL402
 * when it no longer covers the cost, and nothing is stored.
 */
create or replace function sl_complete_message(
  p_account uuid, p_user uuid, p_key uuid, p_prospect text, p_product uuid,
  p_research jsonb, p_research_source text, p_message text, p_message_type text,
  p_word_count integer, p_character_count integer, p_engine text,
  p_research_cost integer, p_message_cost integer
) returns table (message_id uuid, body text, reload boolean)
language plpgsql as $$
declare
  v_id uuid := gen_random_uuid();
  v_reload boolean := false;
  v_body text;
begin
  perform sl_release_credit_hold(p_account, p_key);
  if p_research_cost > 0 then
    v_reload := sl_debit_credits(p_account, 'research', p_research_cost, p_user, v_id) or v_reload;
    perform sl_count_usage(p_account, 'research', 1);
  end if;
  v_reload := sl_debit_credits(p_account, 'message', p_message_cost, p_user, v_id) or v_reload;
  perform sl_count_usage(p_account, 'message', 1);
  insert into messages (id, account_id, user_id, idempotency_key, prospect_url, product_id, research_summary, research_source,
                        generated_message, message_type, word_count, character_count, engine, credits_charged)
  values (v_id, p_account, p_user, p_key, p_prospect, p_product, p_research, p_research_source,
          p_message, p_message_type, p_word_count, p_character_count, p_engine, p_research_cost + p_message_cost);
  v_body := jsonb_build_object(
    'success', true, 'status', 'completed', 'message_id', v_id, 'generated_message', p_message,
    'research_summary', p_research,
    'message_metadata', jsonb_build_object('message_type', p_message_type, 'word_count', p_word_count, 'character_count', p_character_count),
    'credits_charged', p_research_cost + p_message_cost, 'generated_by', p_engine)::text;
  perform sl_complete_idempotent(p_account, p_key, 200, v_body);
  perform sl_emit(p_account, null, 'message.completed', jsonb_build_object(
    'message_id', v_id, 'user_id', p_user, 'prospect_url', p_prospect, 'message_type', p_message_type,
    'word_count', p_word_count, 'credits_charged', p_research_cost + p_message_cost), 'account');
  return query select v_id, v_body, v_reload;
end
$$;
