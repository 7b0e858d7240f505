//! bench/grpc.sh's gRPC server: helloworld.Greeter/SayHello on tonic, one thread (the script pins it to one CPU),
//! listening on 127.0.0.1:PORT (the first argument, 50061 without one).

mod hello {
    tonic::include_proto!("helloworld");
}

use hello::greeter_server::{Greeter, GreeterServer};
use hello::{HelloReply, HelloRequest};

struct Hello;

#[tonic::async_trait]
impl Greeter for Hello {
    async fn say_hello(&self, request: tonic::Request<HelloRequest>) -> Result<tonic::Response<HelloReply>, tonic::Status> {
        Ok(tonic::Response::new(HelloReply { message: format!("Hello {}", request.into_inner().name) }))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let port: u16 = std::env::args().nth(1).map_or(Ok(50061), |p| p.parse())?;
    let addr = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    eprintln!("listening on {addr}");
    tonic::transport::Server::builder().add_service(GreeterServer::new(Hello)).serve(addr).await?;
    Ok(())
}
