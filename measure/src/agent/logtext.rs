//! Text from requests made safe for the agent's log: control characters escaped, length bounded.

/// Most characters of a request field that reach the log.
pub const MAX_LOGGED_CHARS: usize = 80;

/// `text` as it may appear in a log line: control characters (newlines,
/// escape codes, ...) and other invisible characters escaped as `\n`,
/// `\u{1b}`, ..., then cut to [`MAX_LOGGED_CHARS`] characters with a note of
/// how long the field was, so that a request can neither forge log lines
/// nor flood the log.
pub fn loggable(text: &str) -> String {
    let mut out = String::new();
    for (shown, c) in text.chars().enumerate() {
        if shown == MAX_LOGGED_CHARS {
            out.push_str(&format!("... ({} bytes in all)", text.len()));
            return out;
        }
        if c.is_control() || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}') {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_long_fields_cut() {
        assert_eq!(loggable("c17/ab12cd"), "c17/ab12cd");
        assert_eq!(loggable("a\nINFO forged line\r\x1b[31mred\u{202e}"), r"a\nINFO forged line\r\u{1b}[31mred\u{202e}");
        let long = "p".repeat(60_000);
        assert_eq!(loggable(&long), format!("{}... (60000 bytes in all)", "p".repeat(80)));
        let exactly = "é".repeat(80);
        assert_eq!(loggable(&exactly), exactly, "80 characters are kept whole");
        assert_eq!(loggable(""), "");
    }
}
