/*
 * How many connect links an account may have open (unused and unexpired) at once: an account key
 * cannot fill the table with links nobody completes. Complete or let some expire first.
 */
create or replace function sl_max_open_connect_links() returns integer
language sql immutable as $$ select 100 $$;
