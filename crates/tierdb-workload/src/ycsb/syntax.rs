//! Property text as YCSB reads it: Java's `Properties.load`.
//!
//! YCSB's client loads each `-P` file with `java.util.Properties.load(InputStream)`, so a
//! file it accepts follows these rules, and so do we:
//!
//! * Bytes are ISO-8859-1 ([`decode`]): every byte is one character. (We take text that
//!   is valid UTF-8 as UTF-8; the two agree on ASCII, which is all a value we apply may
//!   hold.)
//! * Lines end at `\n`, `\r` or `\r\n`. Leading blanks (space, tab, form feed) are
//!   skipped; a line that is then empty, or starts with `#` or `!`, is a comment.
//! * A line ending in an odd number of backslashes continues on the next line, whose
//!   leading blanks are skipped (a continued line is never a comment).
//! * The key runs to the first unescaped `=`, `:` or blank. Blanks, then one `=` or `:`,
//!   then blanks again separate it from the value; so `key value`, `key=value`,
//!   `key = value` and `key:value` are all the same, and `key` alone has an empty value.
//! * In keys and values, `\t`, `\n`, `\r`, `\f` and `\uXXXX` are escapes and a backslash
//!   before any other character stands for that character (`\=` is `=`). A malformed
//!   `\u` is an error, as in Java.
//! * A later line with the same key replaces the earlier one (the caller applies lines in
//!   order).
//!
//! One leniency: Java keeps a value's trailing blanks (YCSB then fails to parse
//! `recordcount=1000␠`); we drop unescaped trailing blanks. A byte-order mark at the
//! start is skipped.

use crate::error::WorkloadError;

/// One `key=value` of the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The key, unescaped.
    pub key: String,
    /// The value, unescaped, trailing blanks dropped.
    pub value: String,
    /// 1-based line the entry starts on.
    pub line: usize,
}

/// Text from the bytes of a property file: UTF-8 if they are, else ISO-8859-1 as
/// Java's `Properties.load(InputStream)` reads them.
pub(crate) fn decode(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).unwrap_or_else(|e| e.into_bytes().iter().map(|&b| char::from(b)).collect())
}

/// The entries of `text`, in order; `origin` names the text in errors.
///
/// # Errors
///
/// [`WorkloadError::Syntax`] for a malformed `\uXXXX` escape, the only thing Java
/// refuses.
pub(crate) fn entries(text: &str, origin: &str) -> Result<Vec<Entry>, WorkloadError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lines = split_lines(text);
    let mut out = Vec::new();
    let mut next = 0;
    while next < lines.len() {
        let line = next + 1;
        let natural = lines[next].trim_start_matches(is_blank);
        next += 1;
        if natural.is_empty() || natural.starts_with(['#', '!']) {
            continue;
        }
        // 1. Join the continued lines into one logical line.
        let mut logical = natural.to_owned();
        while ends_in_odd_backslashes(&logical) {
            logical.pop();
            match lines.get(next) {
                Some(more) => {
                    logical.push_str(more.trim_start_matches(is_blank));
                    next += 1;
                }
                None => break,
            }
        }
        // 2. Split it into key and value, then unescape both.
        let (key, value) = split_key_value(&logical);
        let syntax = |reason| WorkloadError::Syntax {
            origin: origin.to_owned(),
            line,
            text: logical.chars().take(200).collect(),
            reason,
        };
        let key = unescape(key).map_err(syntax)?.0;
        let (mut value, keep) = unescape(value).map_err(syntax)?;
        value.truncate(keep);
        out.push(Entry { key, value, line });
    }
    Ok(out)
}

/// Java's blanks between key and value: space, tab, form feed.
fn is_blank(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\u{c}')
}

/// The natural lines of `text`, split at `\n`, `\r` or `\r\n`.
fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut rest = text;
    while let Some(end) = rest.find(['\n', '\r']) {
        lines.push(&rest[..end]);
        let skip = if rest[end..].starts_with("\r\n") { 2 } else { 1 };
        rest = &rest[end + skip..];
    }
    if !rest.is_empty() {
        lines.push(rest);
    }
    lines
}

fn ends_in_odd_backslashes(s: &str) -> bool {
    s.bytes().rev().take_while(|&b| b == b'\\').count() % 2 == 1
}

/// The raw key and raw value of a logical line (escapes still in place).
fn split_key_value(logical: &str) -> (&str, &str) {
    let mut escaped = false;
    let mut key_end = logical.len();
    let mut has_separator = false;
    for (i, c) in logical.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == '=' || c == ':' {
            key_end = i;
            has_separator = true;
            break;
        } else if is_blank(c) {
            key_end = i;
            break;
        }
    }
    let key = &logical[..key_end];
    let mut rest = logical[key_end..].chars();
    let mut value_start = key_end;
    if has_separator {
        rest.next();
        value_start += 1;
    }
    for c in rest {
        if is_blank(c) {
        } else if !has_separator && (c == '=' || c == ':') {
            has_separator = true;
        } else {
            break;
        }
        value_start += c.len_utf8();
    }
    (key, &logical[value_start..])
}

/// Java's `loadConvert`: the text with its escapes replaced, and the length of the
/// result without its unescaped trailing blanks.
fn unescape(raw: &str) -> Result<(String, usize), &'static str> {
    let mut out = String::with_capacity(raw.len());
    let mut keep = 0;
    let mut chars = raw.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            if !is_blank(c) {
                keep = out.len();
            }
            continue;
        }
        let unescaped = match chars.next() {
            Some('t') => '\t',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('f') => '\u{c}',
            Some('u') => {
                let mut code = 0u32;
                for _ in 0..4 {
                    let digit = chars.next().and_then(|d| d.to_digit(16)).ok_or("malformed \\uXXXX escape")?;
                    code = code * 16 + digit;
                }
                // A lone surrogate half, which Java would keep, cannot be a Rust char.
                char::from_u32(code).unwrap_or(char::REPLACEMENT_CHARACTER)
            }
            Some(other) => other,
            // A backslash at the very end (a continuation with no next line) is dropped.
            None => break,
        };
        out.push(unescaped);
        keep = out.len();
    }
    Ok((out, keep))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Vec<(String, String, usize)> {
        entries(text, "t").unwrap().into_iter().map(|e| (e.key, e.value, e.line)).collect()
    }

    fn kv(k: &str, v: &str, line: usize) -> (String, String, usize) {
        (k.to_owned(), v.to_owned(), line)
    }

    #[test]
    fn separators_blanks_and_comments() {
        let text = "# c\n  ! c\n\na=1\nb = 2\nc:3\nd 4\ne\t=  5\nf\ng=\n  h  :  x y  \n";
        assert_eq!(
            parse(text),
            [
                kv("a", "1", 4),
                kv("b", "2", 5),
                kv("c", "3", 6),
                kv("d", "4", 7),
                kv("e", "5", 8),
                kv("f", "", 9),
                kv("g", "", 10),
                kv("h", "x y", 11),
            ]
        );
        // A separator after blanks is taken once; a second one belongs to the value.
        assert_eq!(parse("k = =v"), [kv("k", "=v", 1)]);
        assert_eq!(parse("k==v"), [kv("k", "=v", 1)]);
        // A comment sign later in the line is part of the value.
        assert_eq!(parse("k=v # not a comment"), [kv("k", "v # not a comment", 1)]);
        assert_eq!(parse("=v"), [kv("", "v", 1)]);
    }

    #[test]
    fn line_ends_and_continuations() {
        assert_eq!(parse("a=1\r\nb=2\rc=3\n"), [kv("a", "1", 1), kv("b", "2", 2), kv("c", "3", 3)]);
        assert_eq!(parse("a=one \\\n    two\nb=3"), [kv("a", "one two", 1), kv("b", "3", 3)]);
        // A continued line starting with # is not a comment; an even count of
        // backslashes does not continue.
        assert_eq!(parse("a=x\\\n#y\nb=c\\\\\nd=e"), [kv("a", "x#y", 1), kv("b", "c\\", 3), kv("d", "e", 4)]);
        // Continuation at the end of the text.
        assert_eq!(parse("a=x\\"), [kv("a", "x", 1)]);
        assert_eq!(parse("\u{feff}a=1"), [kv("a", "1", 1)]);
    }

    #[test]
    fn escapes() {
        assert_eq!(parse("a\\=b=c\\:d"), [kv("a=b", "c:d", 1)]);
        assert_eq!(parse("a\\ b=\\u0041\\t\\q"), [kv("a b", "A\tq", 1)]);
        // An escaped trailing blank stays; unescaped ones go.
        assert_eq!(parse("a=x\\  \t"), [kv("a", "x ", 1)]);
        let err = entries("\n\nk=\\u12G4", "workload file w").unwrap_err();
        assert_eq!(err.to_string(), "workload file w line 3: cannot read `k=\\u12G4`: malformed \\uXXXX escape");
    }

    #[test]
    fn latin1_bytes_are_characters() {
        assert_eq!(decode(b"# \xa9 Yahoo\na=1".to_vec()), "# \u{a9} Yahoo\na=1");
        assert_eq!(decode("# © Yahoo".as_bytes().to_vec()), "# © Yahoo");
    }
}
