//! OpenFlow over TLS with client-certificate verification, against real Open vSwitch
//! (`ovs-vsctl set-ssl`, `ssl:` controller target). Needs `openssl`. `FABRICFLOW_SKIP_OVS=1`
//! skips.
#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::panic,
    clippy::indexing_slicing
)]

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::*;
use fabricflow_controller::config::TlsConfig;
use fabricflow_controller::service::Controller;

fn openssl(dir: &Path, args: &[&str]) {
    let st = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap();
    assert!(
        st.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&st.stderr)
    );
}

/// CA, controller (server) and switch (client) certificates in a fresh directory.
fn pki() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ff-pki-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    openssl(
        &dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "ca.key",
            "-out",
            "ca.crt",
            "-days",
            "2",
            "-subj",
            "/CN=fabricflow-test-ca",
        ],
    );
    for (name, eku) in [("ctl", "serverAuth"), ("sw", "clientAuth")] {
        std::fs::write(
            dir.join(format!("{name}.ext")),
            format!(
                "subjectAltName=IP:127.0.0.1\nextendedKeyUsage={eku}\nbasicConstraints=CA:FALSE\n"
            ),
        )
        .unwrap();
        openssl(
            &dir,
            &[
                "req",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-keyout",
                &format!("{name}.key"),
                "-out",
                &format!("{name}.csr"),
                "-subj",
                &format!("/CN={name}"),
            ],
        );
        openssl(
            &dir,
            &[
                "x509",
                "-req",
                "-in",
                &format!("{name}.csr"),
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-CAcreateserial",
                "-out",
                &format!("{name}.crt"),
                "-days",
                "2",
                "-extfile",
                &format!("{name}.ext"),
            ],
        );
    }
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn switch_syncs_over_tls_with_client_certificate() {
    if skip() {
        return;
    }
    init_logs();
    let dir = pki();
    let line = Line::create("t", 0x00ff_0000_0000_0d00, 1);
    let mut cfg = config(0);
    cfg.tls = Some(TlsConfig {
        cert: dir.join("ctl.crt"),
        key: dir.join("ctl.key"),
        client_ca: Some(dir.join("ca.crt")),
    });
    let c = Controller::start(cfg, line.fixture.clone()).await.unwrap();
    let p = |f: &str| dir.join(f).to_str().unwrap().to_string();
    sh(
        "ovs-vsctl",
        &["set-ssl", &p("sw.key"), &p("sw.crt"), &p("ca.crt")],
    );
    line.set_controllers(&[format!("ssl:{}", c.openflow_addr)]);
    let ok = wait_for(20, || synced(&c) == 1).await;
    let _ = Command::new("ovs-vsctl").arg("del-ssl").status();
    assert!(ok, "switch synced over TLS: {:?}", c.shared.switches());
    assert!(!line.our_flows(0).is_empty());

    // A plain-TCP peer on the TLS port is refused (TLS handshake fails).
    let addr = c.openflow_addr;
    let closed = tokio::task::spawn_blocking(move || {
        use std::io::{Read, Write};
        let mut s = std::net::TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        let _ = s.write_all(&fabricflow_proto::openflow::message::Message::hello(1).to_bytes());
        let mut b = [0u8; 64];
        matches!(s.read(&mut b), Ok(0) | Err(_)) || matches!(s.read(&mut b), Ok(0) | Err(_))
    })
    .await
    .unwrap();
    assert!(closed);
    assert_eq!(synced(&c), 1);
    c.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
