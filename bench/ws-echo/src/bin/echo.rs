//! A WebSocket echo server for bench/ws.sh, on one thread (pinned to one CPU by the script): every data message
//! sent back as it came. Prints "port N" once it listens on 127.0.0.1 (port from argv, 0 for the kernel's choice).

use futures_util::{SinkExt, StreamExt};
use tokio::net::TcpListener;

fn main() {
    let port: u16 = std::env::args().nth(1).and_then(|p| p.parse().ok()).unwrap_or(0);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let local = tokio::task::LocalSet::new();
    local.block_on(&rt, async move {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
        println!("port {}", listener.local_addr().expect("address").port());
        loop {
            let Ok((stream, _)) = listener.accept().await else { continue };
            let _ = stream.set_nodelay(true);
            tokio::task::spawn_local(async move {
                let Ok(ws) = tokio_tungstenite::accept_async(stream).await else { return };
                let (mut tx, mut rx) = ws.split();
                while let Some(Ok(message)) = rx.next().await {
                    if (message.is_text() || message.is_binary()) && tx.send(message).await.is_err() {
                        return;
                    }
                }
            });
        }
    });
}
