//! The agent's TLS identity: a PEM certificate chain and private key, served with rustls (ring provider).

use super::AgentError;
use axum_server::tls_rustls::RustlsConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::path::Path;
use std::sync::Arc;

/// A certificate chain and its private key.
#[derive(Clone)]
pub struct TlsIdentity {
    certs: Vec<CertificateDer<'static>>,
    key: Arc<PrivateKeyDer<'static>>,
}

impl std::fmt::Debug for TlsIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TlsIdentity").field("certs", &self.certs.len()).finish_non_exhaustive()
    }
}

impl TlsIdentity {
    /// Parses PEM text: one or more `CERTIFICATE` blocks and one private key
    /// (PKCS#8, PKCS#1 or SEC1).
    pub fn from_pem(cert_pem: &[u8], key_pem: &[u8]) -> Result<TlsIdentity, AgentError> {
        let certs: Vec<CertificateDer<'static>> =
            rustls_pemfile::certs(&mut &cert_pem[..])
                .collect::<Result<_, _>>()
                .map_err(|e| AgentError::Tls(format!("reading the certificate: {e}")))?;
        if certs.is_empty() {
            return Err(AgentError::Tls("no CERTIFICATE block in the certificate file".into()));
        }
        let key = rustls_pemfile::private_key(&mut &key_pem[..])
            .map_err(|e| AgentError::Tls(format!("reading the private key: {e}")))?
            .ok_or_else(|| AgentError::Tls("no private key in the key file".into()))?;
        let identity = TlsIdentity { certs, key: Arc::new(key) };
        identity.server_config()?;
        Ok(identity)
    }

    /// Reads a PEM certificate chain file and a PEM key file.
    pub fn from_pem_files(cert: &Path, key: &Path) -> Result<TlsIdentity, AgentError> {
        let read =
            |p: &Path| std::fs::read(p).map_err(|e| AgentError::Tls(format!("cannot read {}: {e}", p.display())));
        TlsIdentity::from_pem(&read(cert)?, &read(key)?)
    }

    fn server_config(&self) -> Result<rustls::ServerConfig, AgentError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ServerConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| AgentError::Tls(e.to_string()))?
            .with_no_client_auth()
            .with_single_cert(self.certs.clone(), self.key.clone_key())
            .map_err(|e| AgentError::Tls(format!("certificate and key do not fit: {e}")))?;
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }

    pub(super) fn rustls_config(&self) -> Result<RustlsConfig, AgentError> {
        Ok(RustlsConfig::from_config(Arc::new(self.server_config()?)))
    }
}
