//! hello.proto compiled in-process by protox (no protoc), then tonic's code generated from its descriptors.

fn main() {
    let files = protox::compile(["hello.proto"], ["."]).expect("hello.proto");
    tonic_prost_build::configure().build_client(false).compile_fds(files).expect("tonic's code for hello.proto");
    println!("cargo:rerun-if-changed=hello.proto");
}
