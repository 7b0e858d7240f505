//! The floor bench/ws.sh measures hakaru beside: a plain tokio-tungstenite client on one thread, C connections
//! each sending a message and waiting for the next one received, N messages in all, then a close.
//! Usage: floor URL CONNECTIONS MESSAGES. Prints messages/s.

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use futures_util::{SinkExt, StreamExt};
use tokio_tungstenite::tungstenite::Message;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let url = args.get(1).cloned().unwrap_or_else(|| "ws://127.0.0.1:9001/".into());
    let conns: usize = args.get(2).and_then(|c| c.parse().ok()).unwrap_or(1);
    let total: u64 = args.get(3).and_then(|n| n.parse().ok()).unwrap_or(100_000);
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("runtime");
    let local = tokio::task::LocalSet::new();
    let left = Rc::new(Cell::new(total));
    let start = Instant::now();
    local.block_on(&rt, async {
        let tasks: Vec<_> = (0..conns)
            .map(|_| {
                let (url, left) = (url.clone(), Rc::clone(&left));
                tokio::task::spawn_local(async move {
                    let (mut ws, _) = tokio_tungstenite::connect_async(url.as_str()).await.expect("connect");
                    while left.get() > 0 {
                        left.set(left.get() - 1);
                        ws.send(Message::text("{\"n\":1}")).await.expect("send");
                        match ws.next().await {
                            Some(Ok(m)) if m.is_text() || m.is_binary() => {}
                            other => panic!("no echo: {other:?}"),
                        }
                    }
                    let _ = ws.close(None).await;
                })
            })
            .collect();
        for t in tasks {
            t.await.expect("client");
        }
    });
    let secs = start.elapsed().as_secs_f64();
    println!("{:.0} messages/s ({total} in {secs:.2} s on {conns} connections)", total as f64 / secs);
}
