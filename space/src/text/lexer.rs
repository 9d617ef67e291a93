//! Tokenizer shared by the text languages.

use super::SyntaxError;
use std::fmt;

/// A token kind.
#[derive(Clone, Debug, PartialEq)]
pub enum Tok {
    /// An identifier (letters, digits, `_`, `.`-free).
    Ident(String),
    /// An integer literal.
    Int(i64),
    /// A floating-point literal (has a `.` or an exponent).
    Float(f64),
    /// A double-quoted string.
    Str(String),
    /// Punctuation or an operator: `( ) [ ] { } , : = + - * / % < <= > >= == += max= min= ..`.
    Punct(&'static str),
    /// End of input.
    Eof,
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Tok::Ident(s) => write!(f, "`{s}`"),
            Tok::Int(v) => write!(f, "`{v}`"),
            Tok::Float(v) => write!(f, "`{v}`"),
            Tok::Str(s) => write!(f, "\"{s}\""),
            Tok::Punct(p) => write!(f, "`{p}`"),
            Tok::Eof => f.write_str("end of input"),
        }
    }
}

/// A token with its byte span.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    /// Kind and payload.
    pub tok: Tok,
    /// Byte offset of the first character.
    pub start: usize,
    /// Byte offset one past the last character.
    pub end: usize,
}

const PUNCTS: [&str; 26] = [
    "max=", "min=", "+=", "<=", ">=", "==", "!=", "..", "->", "(", ")", "[", "]", "{", "}", ",", ":", "=", "+", "-",
    "*", "/", "%", "<", ">", ";",
];

/// Splits `text` into tokens; `#` starts a comment to the end of the line.
/// The last token is always `Tok::Eof`.
pub fn lex(text: &str) -> Result<Vec<Token>, SyntaxError> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
            continue;
        }
        let start = i;
        if c.is_ascii_alphabetic() || c == b'_' {
            while i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_') {
                i += 1;
            }
            let word = &text[start..i];
            // `max=` / `min=` are update operators, not identifiers.
            if (word == "max" || word == "min") && bytes.get(i) == Some(&b'=') && bytes.get(i + 1) != Some(&b'=') {
                i += 1;
                let p = if word == "max" { "max=" } else { "min=" };
                out.push(Token { tok: Tok::Punct(p), start, end: i });
                continue;
            }
            out.push(Token { tok: Tok::Ident(word.to_string()), start, end: i });
            continue;
        }
        if c.is_ascii_digit() || (c == b'.' && bytes.get(i + 1).is_some_and(|d| d.is_ascii_digit())) {
            let mut is_float = false;
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
            if i < bytes.len() && bytes[i] == b'.' && bytes.get(i + 1) != Some(&b'.') {
                is_float = true;
                i += 1;
                while i < bytes.len() && bytes[i].is_ascii_digit() {
                    i += 1;
                }
            }
            if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
                let mut j = i + 1;
                if j < bytes.len() && (bytes[j] == b'+' || bytes[j] == b'-') {
                    j += 1;
                }
                if j < bytes.len() && bytes[j].is_ascii_digit() {
                    is_float = true;
                    i = j;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                }
            }
            let s = &text[start..i];
            let tok = if is_float {
                Tok::Float(s.parse().map_err(|_| SyntaxError::new(start, format!("bad number `{s}`")))?)
            } else {
                Tok::Int(s.parse().map_err(|_| SyntaxError::new(start, format!("integer `{s}` is too large")))?)
            };
            out.push(Token { tok, start, end: i });
            continue;
        }
        if c == b'"' {
            i += 1;
            let mut s = String::new();
            loop {
                match bytes.get(i) {
                    None | Some(b'\n') => return Err(SyntaxError::new(start, "unterminated string")),
                    Some(b'"') => {
                        i += 1;
                        break;
                    }
                    Some(b'\\') if i + 1 < bytes.len() => {
                        s.push(bytes[i + 1] as char);
                        i += 2;
                    }
                    Some(_) => {
                        let ch = text[i..].chars().next().unwrap_or('?');
                        s.push(ch);
                        i += ch.len_utf8();
                    }
                }
            }
            out.push(Token { tok: Tok::Str(s), start, end: i });
            continue;
        }
        match PUNCTS.iter().find(|p| text[i..].starts_with(**p)) {
            Some(p) => {
                i += p.len();
                out.push(Token { tok: Tok::Punct(p), start, end: i });
            }
            None => {
                let ch = text[i..].chars().next().unwrap_or('?');
                return Err(SyntaxError::new(start, format!("unexpected character `{ch}`")));
            }
        }
    }
    out.push(Token { tok: Tok::Eof, start: text.len(), end: text.len() });
    Ok(out)
}
