//! The shared token: loading it from a file, and the middleware that refuses every request without it.

use super::AgentError;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest, Sha256};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use subtle::ConstantTimeEq;

/// Shortest token accepted (bytes, after trimming surrounding whitespace).
pub const MIN_TOKEN_LEN: usize = 16;

/// A shared secret. Its `Debug` form does not show it.
#[derive(Clone)]
pub struct Token(Arc<str>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Token(..)")
    }
}

impl Token {
    /// A token from its text (surrounding whitespace removed); at least [`MIN_TOKEN_LEN`] bytes.
    pub fn new(text: &str) -> Result<Token, AgentError> {
        let t = text.trim();
        if t.len() < MIN_TOKEN_LEN {
            return Err(AgentError::Token(format!(
                "the token has {} bytes; use at least {MIN_TOKEN_LEN} (e.g. `openssl rand -hex 32`)",
                t.len()
            )));
        }
        if t.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(AgentError::Token("the token must be one word of printable characters".into()));
        }
        Ok(Token(t.into()))
    }

    /// Reads a token file (the whole file, trimmed). Refuses a file that
    /// group or others may read or write, as ssh refuses such keys.
    pub fn from_file(path: &Path) -> Result<Token, AgentError> {
        let meta = std::fs::metadata(path)
            .map_err(|e| AgentError::Token(format!("cannot read token file {}: {e}", path.display())))?;
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = meta.permissions().mode() & 0o777;
            if mode & 0o077 != 0 {
                return Err(AgentError::Token(format!(
                    "token file {} has mode {mode:03o}: other users may read it (chmod 600 {})",
                    path.display(),
                    path.display()
                )));
            }
        }
        let text = std::fs::read_to_string(path)
            .map_err(|e| AgentError::Token(format!("cannot read token file {}: {e}", path.display())))?;
        Token::new(&text).map_err(|e| AgentError::Token(format!("token file {}: {e}", path.display())))
    }

    /// The `Authorization` header value carrying this token.
    pub fn bearer(&self) -> String {
        format!("Bearer {}", self.0)
    }

    /// True if `given` is this token. Constant time in the token's content
    /// and length: both sides are hashed and the digests compared with `subtle`.
    pub fn matches(&self, given: &[u8]) -> bool {
        let want = Sha256::digest(self.0.as_bytes());
        let got = Sha256::digest(given);
        want.ct_eq(&got).into()
    }
}

/// Middleware: lets a request through only with `Authorization: Bearer TOKEN`.
/// Refusals are 401 and are logged with the peer's address; the body of a
/// refused request is never read.
pub(super) async fn require_token(State(token): State<Token>, request: Request, next: Next) -> Response {
    let given = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.as_bytes().strip_prefix(b"Bearer "))
        .map(<[u8]>::to_vec);
    match given {
        Some(g) if token.matches(&g) => next.run(request).await,
        Some(_) => refuse(&request, "wrong token"),
        None => refuse(&request, "no bearer token"),
    }
}

fn refuse(request: &Request, why: &str) -> Response {
    let peer = match request.extensions().get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(addr)) => addr.to_string(),
        None => "an unknown peer".to_string(),
    };
    tracing::warn!("refused {} {} from {peer}: {why}", request.method(), request.uri().path());
    (StatusCode::UNAUTHORIZED, [(header::WWW_AUTHENTICATE, "Bearer")], "unauthorized\n").into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_compare_whole_and_are_not_shown() {
        let t = Token::new("  0123456789abcdef0123\n").expect("token");
        assert!(t.matches(b"0123456789abcdef0123"));
        assert!(!t.matches(b"0123456789abcdef012"));
        assert!(!t.matches(b"0123456789abcdef01234"));
        assert!(!t.matches(b""));
        assert_eq!(format!("{t:?}"), "Token(..)");
        assert!(Token::new("short").is_err());
        assert!(Token::new("0123456789 abcdef0123").is_err());
    }

    #[test]
    fn token_files_others_may_read_are_refused() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("token");
        std::fs::write(&path, "0123456789abcdef0123\n").expect("writes");
        for mode in [0o644, 0o640, 0o604, 0o660] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
            let e = Token::from_file(&path).expect_err("refused").to_string();
            let want = format!(
                "token file {p} has mode {mode:03o}: other users may read it (chmod 600 {p})",
                p = path.display()
            );
            assert_eq!(e, want);
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        assert!(Token::from_file(&path).expect("accepted").matches(b"0123456789abcdef0123"));
    }
}
