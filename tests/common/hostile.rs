//! Small misbehaving servers on loopback, one thread per connection, for tests/hostile.rs and tests/fuzz.rs.

use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::Duration;

/// A server that runs `handle` on a thread of its own for every connection it accepts (hakaru's preflight check
/// included). It stops accepting when dropped; each handler ends when its client closes or after a read timeout.
pub struct Hostile {
    pub addr: SocketAddr,
    stop: Arc<AtomicBool>,
    acceptor: Option<JoinHandle<()>>,
}

impl Hostile {
    pub fn start(handle: impl Fn(TcpStream) + Send + Sync + 'static) -> Hostile {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let handle = Arc::new(handle);
        let acceptor = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                for conn in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(conn) = conn else { continue };
                    // A handler blocked on a client that vanished still ends, so the test process does not keep it.
                    conn.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
                    let handle = Arc::clone(&handle);
                    std::thread::spawn(move || handle(conn));
                }
            })
        };
        Hostile { addr, stop, acceptor: Some(acceptor) }
    }

    pub fn url(&self, scheme: &str) -> String {
        format!("{scheme}://{}/", self.addr)
    }
}

impl Drop for Hostile {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the blocked accept so the thread sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(a) = self.acceptor.take() {
            let _ = a.join();
        }
    }
}
