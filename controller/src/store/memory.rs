//! In-memory store: one controller, no election (role EQUAL).

use std::collections::BTreeMap;
use std::sync::Mutex;

use tokio::sync::watch;

use super::{BoxFuture, Leadership, Store, StoreError};

#[derive(Debug)]
pub struct MemoryStore {
    data: Mutex<BTreeMap<String, String>>,
    leadership: watch::Sender<Leadership>,
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore {
            data: Mutex::new(BTreeMap::new()),
            leadership: watch::Sender::new(Leadership::Standalone),
        }
    }
}

impl Store for MemoryStore {
    fn kind(&self) -> &'static str {
        "memory"
    }

    fn put(&self, key: String, value: String) -> BoxFuture<'_, Result<(), StoreError>> {
        if let Ok(mut d) = self.data.lock() {
            d.insert(key, value);
        }
        Box::pin(async { Ok(()) })
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
}
