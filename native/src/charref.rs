//! Character references as the HTML tokenizer decodes them (WHATWG, character reference state),
//! for the raw text and attribute values lol_html hands over undecoded (parse.rs).

use crate::entities::{ENTITIES, LONGEST};
use std::borrow::Cow;

/// Windows-1252 for the numeric references 0x80–0x9F (WHATWG, numeric character reference end
/// state); 0 where the code point stays as it is.
const C1: [u32; 32] = [
    0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039,
    0x0152, 0, 0x017D, 0, 0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC,
    0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
];

/// The character a numeric reference names, as the tokenizer turns it.
fn numeric(value: u32) -> char {
    match value {
        0 | 0xD800..=0xDFFF | 0x11_0000.. => '\u{FFFD}',
        0x80..=0x9F if C1[(value - 0x80) as usize] != 0 => {
            char::from_u32(C1[(value - 0x80) as usize]).unwrap_or('\u{FFFD}')
        }
        _ => char::from_u32(value).unwrap_or('\u{FFFD}'),
    }
}

/// Raw text or attribute value as the tree holds it: newlines normalized (CR LF and CR to LF,
/// the input stream's preprocessing) and character references decoded, in an attribute value as
/// the tokenizer does there (a legacy reference without ";" before "=" or an alphanumeric stays).
pub fn decode(raw: &str, attribute: bool) -> Cow<'_, str> {
    let raw: Cow<'_, str> = if raw.contains('\r') {
        Cow::Owned(raw.replace("\r\n", "\n").replace('\r', "\n"))
    } else {
        Cow::Borrowed(raw)
    };
    if !raw.contains('&') {
        return raw;
    }
    let s = raw.as_bytes();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    let mut copied = 0;
    while let Some(offset) = raw[i..].find('&') {
        let amp = i + offset;
        i = amp + 1;
        if s.get(i) == Some(&b'#') {
            let hex = matches!(s.get(i + 1), Some(b'x' | b'X'));
            let start = i + 1 + usize::from(hex);
            let mut end = start;
            let mut value: u32 = 0;
            while let Some(&b) = s.get(end) {
                let digit = if hex {
                    (b as char).to_digit(16)
                } else {
                    (b as char).to_digit(10)
                };
                let Some(digit) = digit else { break };
                value = value
                    .saturating_mul(if hex { 16 } else { 10 })
                    .saturating_add(digit)
                    .min(0x11_0000);
                end += 1;
            }
            if end == start {
                continue; // "&#" without digits stays as it is
            }
            if s.get(end) == Some(&b';') {
                end += 1;
            }
            out.push_str(&raw[copied..amp]);
            out.push(numeric(value));
            copied = end;
            i = end;
            continue;
        }
        let alnum = s[i..]
            .iter()
            .take(LONGEST)
            .take_while(|b| b.is_ascii_alphanumeric())
            .count();
        // The longest name that the text starts with (names are alphanumerics and a final ";").
        let mut found = None;
        for len in (1..=alnum).rev() {
            let with_semicolon = s.get(i + len) == Some(&b';');
            let candidates = [(with_semicolon, len + 1), (true, len)];
            for (possible, n) in candidates {
                if possible {
                    if let Ok(k) =
                        ENTITIES.binary_search_by(|(name, _)| name.as_bytes().cmp(&s[i..i + n]))
                    {
                        found = Some((n, ENTITIES[k].1));
                        break;
                    }
                }
            }
            if found.is_some() {
                break;
            }
        }
        let Some((n, value)) = found else { continue };
        let next = s.get(i + n).copied();
        if attribute
            && s[i + n - 1] != b';'
            && next.is_some_and(|b| b == b'=' || b.is_ascii_alphanumeric())
        {
            continue;
        }
        out.push_str(&raw[copied..amp]);
        out.push_str(value);
        copied = i + n;
        i = copied;
    }
    out.push_str(&raw[copied..]);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_references_as_the_tokenizer() {
        assert_eq!(
            decode("a&amp;b&copy=3&notit;&#x41;&#0;&#128;&#", true),
            "a&b&copy=3&notit;A\u{FFFD}\u{20AC}&#"
        );
        assert_eq!(decode("&notit; &ampx", false), "\u{AC}it; &x");
        assert_eq!(decode("a\r\nb\rc", true), "a\nb\nc");
    }
}
