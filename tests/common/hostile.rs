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

/// An HTTP/2 peer's reading: skips the client's frames until a HEADERS frame (a request) and gives its stream id
/// (4 bytes, as on the wire); None once the client has closed.
#[allow(dead_code)] // not every test file that has `common` serves HTTP/2
pub fn next_headers(s: &mut TcpStream) -> Option<[u8; 4]> {
    use std::io::Read;
    loop {
        let mut head = [0u8; 9];
        s.read_exact(&mut head).ok()?;
        let len = (usize::from(head[0]) << 16) | (usize::from(head[1]) << 8) | usize::from(head[2]);
        let mut payload = vec![0u8; len];
        s.read_exact(&mut payload).ok()?;
        if head[3] == 1 {
            return Some([head[5], head[6], head[7], head[8]]);
        }
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
