//! In-memory store: one controller, no election (role EQUAL). Given a state file, the keys
//! under [`DURABLE_PREFIX`] (the operator's decisions) are written there on every change and
//! read back at start, so a drain outlives a restart.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use tokio::sync::watch;

use super::{BoxFuture, Leadership, Store, StoreError, DURABLE_PREFIX};

#[derive(Debug)]
pub struct MemoryStore {
    data: Mutex<BTreeMap<String, String>>,
    leadership: watch::Sender<Leadership>,
    state_file: Option<PathBuf>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            data: Mutex::new(BTreeMap::new()),
            leadership: watch::Sender::new(Leadership::Standalone),
            state_file: None,
        }
    }
}

fn file_error(path: &Path, reason: impl ToString) -> StoreError {
    StoreError::File {
        path: path.display().to_string(),
        reason: reason.to_string(),
    }
}

impl MemoryStore {
    /// A store keeping its durable keys in `path` (JSON object key → value); a missing file is
    /// an empty store, an unreadable one an error (starting without the operator's drains
    /// would put drained links back into service unasked).
    pub fn with_state_file(path: PathBuf) -> Result<Self, StoreError> {
        let data: BTreeMap<String, String> = match std::fs::read_to_string(&path) {
            Ok(text) => serde_json::from_str(&text).map_err(|e| file_error(&path, e))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeMap::new(),
            Err(e) => return Err(file_error(&path, e)),
        };
        Ok(MemoryStore {
            data: Mutex::new(data),
            state_file: Some(path),
            ..MemoryStore::default()
        })
    }

    /// Writes the durable keys to the state file (a temporary file renamed over it, so a crash
    /// leaves the old or the new content, never half).
    fn persist(&self, data: &BTreeMap<String, String>) -> Result<(), StoreError> {
        let Some(path) = &self.state_file else {
            return Ok(());
        };
        let durable: BTreeMap<&String, &String> = data
            .iter()
            .filter(|(k, _)| k.starts_with(DURABLE_PREFIX))
            .collect();
        let text = serde_json::to_string_pretty(&durable).map_err(|e| file_error(path, e))?;
        let tmp = path.with_extension("tmp");
        std::fs::write(&tmp, text).map_err(|e| file_error(&tmp, e))?;
        std::fs::rename(&tmp, path).map_err(|e| file_error(path, e))
    }
}

impl Store for MemoryStore {
    fn kind(&self) -> &'static str {
        "memory"
    }

    fn put(&self, key: String, value: String) -> BoxFuture<'_, Result<(), StoreError>> {
        let durable = key.starts_with(DURABLE_PREFIX);
        let r = match self.data.lock() {
            Ok(mut d) => {
                d.insert(key, value);
                if durable {
                    self.persist(&d)
                } else {
                    Ok(())
                }
            }
            Err(_) => Ok(()),
        };
        Box::pin(async { r })
    }

    fn list(&self, prefix: String) -> BoxFuture<'_, Result<Vec<(String, String)>, StoreError>> {
        let out = self
            .data
            .lock()
            .map(|d| {
                d.range(prefix.clone()..)
                    .take_while(|(k, _)| k.starts_with(&prefix))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        Box::pin(async { Ok(out) })
    }

    fn leadership(&self) -> watch::Receiver<Leadership> {
        self.leadership.subscribe()
    }

    fn healthy(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn put_list() {
        let s = MemoryStore::default();
        s.put("links/a".into(), "1".into()).await.unwrap();
        s.put("links/b".into(), "2".into()).await.unwrap();
        s.put("m".into(), "3".into()).await.unwrap();
        assert_eq!(s.list("links/".into()).await.unwrap().len(), 2);
        assert_eq!(*s.leadership().borrow(), Leadership::Standalone);
    }

    #[tokio::test]
    async fn durable_keys_outlive_the_store_in_its_state_file() {
        let dir = std::env::temp_dir().join(format!("ffstore-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("state.json");
        let _ = std::fs::remove_file(&path);
        let s = MemoryStore::with_state_file(path.clone()).unwrap();
        s.put("operator/state".into(), "{\"x\":1}".into())
            .await
            .unwrap();
        s.put("links/a".into(), "1".into()).await.unwrap();
        drop(s);
        let s = MemoryStore::with_state_file(path.clone()).unwrap();
        assert_eq!(
            s.list("operator/".into()).await.unwrap(),
            vec![("operator/state".to_string(), "{\"x\":1}".to_string())]
        );
        assert!(
            s.list("links/".into()).await.unwrap().is_empty(),
            "not durable"
        );
        std::fs::write(&path, "not json").unwrap();
        assert!(matches!(
            MemoryStore::with_state_file(path.clone()),
            Err(StoreError::File { .. })
        ));
        let unwritable = MemoryStore::with_state_file(dir.join("no/such/dir/state.json")).unwrap();
        assert!(unwritable
            .put("operator/state".into(), "{}".into())
            .await
            .is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
