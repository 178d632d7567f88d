/**
 * RFC 4180 records, as a spreadsheet reads them: quoted fields may hold commas, quotes (doubled) and
 * line breaks. `crlfOnly`: only CRLF ends a record, as the RFC writes it (a lone CR or LF is text),
 * for checking a file we write; otherwise CR, LF or CRLF ends one, for reading others' files.
 * `unfinished` is what follows the last record's end (null when the text ends with one), for the
 * caller to keep or to refuse.
 */
export function parseCsv(text: string, { crlfOnly = false } = {}): { records: string[][]; unfinished: string[] | null } {
  const records: string[][] = [];
  let record: string[] = [];
  let field = '';
  let quoted = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        field += '"';
        i++;
      } else if (c === '"') quoted = false;
      else field += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') {
      record.push(field);
      field = '';
    } else if (crlfOnly ? c === '\r' && text[i + 1] === '\n' : c === '\n' || c === '\r') {
      if (c === '\r' && text[i + 1] === '\n') i++;
      record.push(field);
      records.push(record);
      record = [];
      field = '';
    } else field += c;
  }
  return { records, unfinished: field || record.length ? [...record, field] : null };
}
