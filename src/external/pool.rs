//! A pool of provider processes: each episode leases one process for its whole length,
//! so episodes run concurrently up to the pool's size. A process that broke (crash, hang,
//! malformed reply) is dropped when its lease ends and a fresh one is started on the next
//! lease; episodes on other processes never notice.

use super::ExternalError;
use super::process::{Launch, ProviderProcess};
use super::protocol::Request;
use serde::de::DeserializeOwned;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

pub struct Pool {
    launch: Launch,
    idle: Mutex<Vec<ProviderProcess>>,
    slots: Arc<Semaphore>,
    size: AtomicUsize,
    spawned: AtomicU64,
}

impl Pool {
    /// A pool of at most `size` processes, started lazily.
    pub fn new(launch: Launch, size: usize) -> Arc<Pool> {
        let size = size.max(1);
        Arc::new(Pool {
            launch,
            idle: Mutex::new(Vec::new()),
            slots: Arc::new(Semaphore::new(size)),
            size: AtomicUsize::new(size),
            spawned: AtomicU64::new(0),
        })
    }

    /// Grows the pool to at least `size` processes (a run's concurrency).
    pub fn grow_to(&self, size: usize) {
        let now = self.size.load(Ordering::SeqCst);
        if size > now {
            self.size.store(size, Ordering::SeqCst);
            self.slots.add_permits(size - now);
        }
    }

    /// How many processes were started so far, restarts included.
    pub fn spawned(&self) -> u64 {
        self.spawned.load(Ordering::SeqCst)
    }

    /// Waits for a free slot and hands out a live process.
    pub async fn lease(self: &Arc<Self>) -> Result<Lease, ExternalError> {
        let permit = self
            .slots
            .clone()
            .acquire_owned()
            .await
            .expect("the pool's semaphore is never closed");
        let reused = self.idle.lock().expect("pool lock").pop();
        let process = match reused {
            Some(p) => p,
            None => {
                self.spawned.fetch_add(1, Ordering::SeqCst);
                ProviderProcess::spawn(&self.launch).await?
            }
        };
        Ok(Lease {
            pool: self.clone(),
            process: Some(process),
            _permit: permit,
        })
    }

    /// One request on any process, for suite-level questions (`list`, `describe`).
    pub async fn ask<T: DeserializeOwned>(
        self: &Arc<Self>,
        req: &Request<'_>,
    ) -> Result<T, ExternalError> {
        self.lease().await?.request(req).await
    }
}

/// Exclusive use of one provider process.
pub struct Lease {
    pool: Arc<Pool>,
    process: Option<ProviderProcess>,
    _permit: OwnedSemaphorePermit,
}

impl Lease {
    pub async fn request<T: DeserializeOwned>(
        &mut self,
        req: &Request<'_>,
    ) -> Result<T, ExternalError> {
        self.process
            .as_mut()
            .expect("a lease holds its process until dropped")
            .request(req)
            .await
    }

    pub fn hello(&self) -> &super::protocol::Hello {
        &self.process.as_ref().expect("held").hello
    }
}

impl Drop for Lease {
    fn drop(&mut self) {
        if let Some(p) = self.process.take()
            && !p.is_broken()
        {
            self.pool.idle.lock().expect("pool lock").push(p);
        }
    }
}
