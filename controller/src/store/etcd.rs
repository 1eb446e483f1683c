//! etcd store and leader election (etcd v3 election API under a lease).
//!
//! - State lives under `/fabricflow/` (keys relative to it).
//! - Election `/fabricflow/leader`: each controller campaigns with its id under its own lease
//!   (TTL `etcd_lease_ttl_s`, kept alive every TTL/3). The winner's generation is the
//!   revision of its election key: etcd revisions only grow, so a later leader always has a
//!   higher generation_id (OpenFlow role fencing). Losers poll the current leader's revision so
//!   their SLAVE role requests carry a non-stale generation.
//! - If etcd becomes unreachable, the leader keeps its role and the switches as they are
//!   (`store_up` = 0, warnings in the log) and keeps retrying; if its lease turns out expired,
//!   it steps down and campaigns again. A new leader fences the old one at the switches anyway.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use etcd_client::{Client, ConnectOptions, GetOptions};
use tokio::sync::watch;
use tracing::{info, warn};

use super::{BoxFuture, Leadership, Store, StoreError};

const PREFIX: &str = "/fabricflow/";
const ELECTION: &str = "/fabricflow/leader";

/// etcd-backed store.
pub struct EtcdStore {
    client: Client,
    leadership: watch::Sender<Leadership>,
    healthy: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl std::fmt::Debug for EtcdStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStore")
            .field("leadership", &*self.leadership.borrow())
            .field("healthy", &self.healthy)
            .finish_non_exhaustive()
    }
}

impl Drop for EtcdStore {
    fn drop(&mut self) {
        self.task.abort();
    }
}

fn err(e: etcd_client::Error) -> StoreError {
    StoreError::Etcd(e.to_string())
}

impl EtcdStore {
    /// Connects to `endpoints` and starts campaigning as `id`.
    pub async fn connect(
        endpoints: Vec<String>,
        id: String,
        lease_ttl_s: i64,
    ) -> Result<EtcdStore, StoreError> {
        let opts = ConnectOptions::new()
            .with_connect_timeout(Duration::from_secs(2))
            .with_timeout(Duration::from_secs(2));
        let client = Client::connect(endpoints, Some(opts)).await.map_err(err)?;
        let leadership = watch::Sender::new(Leadership::Follower { generation: 0 });
        let healthy = Arc::new(AtomicBool::new(true));
        let task = tokio::spawn(election_loop(
            client.clone(),
            id,
            lease_ttl_s,
            leadership.clone(),
            healthy.clone(),
        ));
        Ok(EtcdStore {
            client,
            leadership,
            healthy,
            task,
        })
    }
}

impl Store for EtcdStore {
    fn kind(&self) -> &'static str {
        "etcd"
    }

    fn put(&self, key: String, value: String) -> BoxFuture<'_, Result<(), StoreError>> {
        let mut kv = self.client.kv_client();
        Box::pin(async move {
            kv.put(format!("{PREFIX}{key}"), value, None)
                .await
                .map(|_| ())
                .map_err(err)
        })
    }

    fn list(&self, prefix: String) -> BoxFuture<'_, Result<Vec<(String, String)>, StoreError>> {
        let mut kv = self.client.kv_client();
        Box::pin(async move {
            let resp = kv
                .get(
                    format!("{PREFIX}{prefix}"),
                    Some(GetOptions::new().with_prefix()),
                )
                .await
                .map_err(err)?;
            Ok(resp
                .kvs()
                .iter()
                .map(|kv| {
                    let k = String::from_utf8_lossy(kv.key());
                    (
                        k.strip_prefix(PREFIX).unwrap_or(&k).to_string(),
                        String::from_utf8_lossy(kv.value()).into_owned(),
                    )
                })
                .collect())
        })
    }

    fn leadership(&self) -> watch::Receiver<Leadership> {
        self.leadership.subscribe()
    }

    fn healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
    }
}

async fn election_loop(
    client: Client,
    id: String,
    ttl: i64,
    tx: watch::Sender<Leadership>,
    healthy: Arc<AtomicBool>,
) {
    loop {
        match campaign_once(&client, &id, ttl, &tx, &healthy).await {
            Ok(()) => {}
            Err(e) => {
                healthy.store(false, Ordering::Relaxed);
                warn!(error = %e, "etcd election: retrying");
            }
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// One lease's life: campaign, lead while the lease lives. Returns when the lease is lost.
async fn campaign_once(
    client: &Client,
    id: &str,
    ttl: i64,
    tx: &watch::Sender<Leadership>,
    healthy: &AtomicBool,
) -> Result<(), etcd_client::Error> {
    let mut c = client.clone();
    let lease = c.lease_grant(ttl, None).await?.id();
    let (mut keeper, mut stream) = c.lease_keep_alive(lease).await?;
    healthy.store(true, Ordering::Relaxed);
    let keepalive_every = Duration::from_millis((ttl as u64 * 1000 / 3).max(200));
    let mut tick = tokio::time::interval(keepalive_every);
    let mut ec = client.election_client();
    let name = ELECTION.to_string();
    let value = id.to_string();
    let mut campaign = Box::pin(async move { ec.campaign(name, value, lease).await });
    let mut observer = client.election_client();
    let mut won: Option<u64> = None;
    loop {
        tokio::select! {
            r = &mut campaign, if won.is_none() => {
                let resp = r?;
                let generation = resp.leader().map_or(0, |k| k.rev().max(0) as u64);
                info!(generation, "etcd election: this controller is the leader");
                won = Some(generation);
                tx.send_replace(Leadership::Leader { generation });
            }
            _ = tick.tick() => {
                let alive = async {
                    keeper.keep_alive().await?;
                    stream.message().await
                };
                match tokio::time::timeout(keepalive_every, alive).await {
                    Ok(Ok(Some(r))) if r.ttl() > 0 => healthy.store(true, Ordering::Relaxed),
                    Ok(Ok(_)) => {
                        warn!("etcd lease expired: stepping down");
                        let g = won.unwrap_or(0);
                        tx.send_replace(Leadership::Follower { generation: g });
                        return Ok(());
                    }
                    Ok(Err(e)) => {
                        healthy.store(false, Ordering::Relaxed);
                        warn!(error = %e, "etcd unreachable: keeping switches as they are, retrying");
                        if won.is_none() {
                            return Err(e);
                        }
                        // Re-open the keepalive stream on the same lease.
                        match c.lease_keep_alive(lease).await {
                            Ok((k, s)) => { keeper = k; stream = s; }
                            Err(e) => warn!(error = %e, "etcd keepalive stream: retrying"),
                        }
                    }
                    Err(_) => {
                        healthy.store(false, Ordering::Relaxed);
                        warn!("etcd keepalive timed out: keeping switches as they are, retrying");
                    }
                }
                if won.is_none() {
                    if let Ok(l) = observer.leader(ELECTION).await {
                        if let Some(kv) = l.kv() {
                            let generation = kv.create_revision().max(0) as u64;
                            if *tx.borrow() != (Leadership::Follower { generation }) {
                                tx.send_replace(Leadership::Follower { generation });
                            }
                        }
                    }
                }
            }
        }
    }
}
