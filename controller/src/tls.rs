//! OpenFlow over TLS: the acceptor the service wraps switch connections in.

use std::sync::Arc;

use crate::config::TlsConfig;

/// A rustls acceptor from PEM files; with `client_ca`, switches must present a certificate
/// signed by it.
pub fn tls_acceptor(t: &TlsConfig) -> Result<tokio_rustls::TlsAcceptor, String> {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let read = |p: &std::path::Path| {
        std::fs::read(p).map_err(|e| format!("cannot read {}: {e}", p.display()))
    };
    let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &read(&t.cert)?[..])
        .collect::<Result<_, _>>()
        .map_err(|e| format!("{}: {e}", t.cert.display()))?;
    if certs.is_empty() {
        return Err(format!("{}: no certificate", t.cert.display()));
    }
    let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut &read(&t.key)?[..])
        .map_err(|e| format!("{}: {e}", t.key.display()))?
        .ok_or_else(|| format!("{}: no private key", t.key.display()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match &t.client_ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in rustls_pemfile::certs(&mut &read(ca)?[..]) {
                roots
                    .add(c.map_err(|e| format!("{}: {e}", ca.display()))?)
                    .map_err(|e| format!("{}: {e}", ca.display()))?;
            }
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider,
            )
            .build()
            .map_err(|e| e.to_string())?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let cfg = builder
        .with_single_cert(certs, key)
        .map_err(|e| e.to_string())?;
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(cfg)))
}
