//! A cursor over tokens with expectation helpers.

use super::{SyntaxError, Tok, Token};

/// How deeply parentheses, unary minus and lists may nest in any parsed
/// text; deeper input is a syntax error, not a stack overflow.
pub const MAX_NESTING: usize = 256;

/// Reads tokens one at a time.
pub struct Cursor {
    toks: Vec<Token>,
    pos: usize,
    depth: usize,
}

impl Cursor {
    /// A cursor at the first token (the vector must end with `Tok::Eof`).
    pub fn new(toks: Vec<Token>) -> Cursor {
        Cursor { toks, pos: 0, depth: 0 }
    }

    /// Runs `f` one nesting level deeper: every recursive step of a parser
    /// goes through here, so input nested beyond [`MAX_NESTING`] levels is
    /// an error at the token where it gets too deep.
    pub fn nest<T>(&mut self, f: impl FnOnce(&mut Cursor) -> Result<T, SyntaxError>) -> Result<T, SyntaxError> {
        if self.depth >= MAX_NESTING {
            return Err(self.error(format!("nested more than {MAX_NESTING} levels deep")));
        }
        self.depth += 1;
        let r = f(self);
        self.depth -= 1;
        r
    }

    /// The current token.
    pub fn peek(&self) -> &Token {
        &self.toks[self.pos.min(self.toks.len() - 1)]
    }

    /// The token after the current one.
    pub fn peek2(&self) -> &Token {
        &self.toks[(self.pos + 1).min(self.toks.len() - 1)]
    }

    /// Consumes and returns the current token.
    pub fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if self.pos < self.toks.len() - 1 {
            self.pos += 1;
        }
        t
    }

    /// Byte offset of the current token.
    pub fn offset(&self) -> usize {
        self.peek().start
    }

    /// True if the current token is the punctuation `p`.
    pub fn at(&self, p: &str) -> bool {
        matches!(&self.peek().tok, Tok::Punct(x) if *x == p)
    }

    /// True at end of input.
    pub fn at_eof(&self) -> bool {
        self.peek().tok == Tok::Eof
    }

    /// Consumes `p` if present.
    pub fn eat(&mut self, p: &str) -> bool {
        if self.at(p) {
            self.bump();
            true
        } else {
            false
        }
    }

    /// Consumes `p` or fails with "expected `p` `context`".
    pub fn expect(&mut self, p: &str, context: &str) -> Result<(), SyntaxError> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(self.error(format!("expected `{p}` {context}")))
        }
    }

    /// Consumes an identifier or fails.
    pub fn ident(&mut self, what: &str) -> Result<(String, usize), SyntaxError> {
        match &self.peek().tok {
            Tok::Ident(s) => {
                let s = s.clone();
                let off = self.offset();
                self.bump();
                Ok((s, off))
            }
            _ => Err(self.error(format!("expected {what}"))),
        }
    }

    /// An error at the current token: "`message`, found `token`".
    pub fn error(&self, message: impl AsRef<str>) -> SyntaxError {
        SyntaxError::new(self.offset(), format!("{}, found {}", message.as_ref(), self.peek().tok))
    }

    /// Fails unless at end of input.
    pub fn expect_eof(&self, context: &str) -> Result<(), SyntaxError> {
        if self.at_eof() {
            Ok(())
        } else {
            Err(self.error(format!("expected end of {context}")))
        }
    }
}
