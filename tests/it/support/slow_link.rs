//! A TCP relay that holds every chunk the client sends for a while before passing it on: a
//! slow network between a process under test and its store, for tests that must see what is
//! still in flight when the process answers.

use std::io::{Read as _, Write as _};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::time::Duration;

/// A relay on a local port to `upstream`; lives as long as the test process.
pub(crate) fn start(upstream: SocketAddr, hold: Duration) -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind the relay");
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming().map_while(Result::ok) {
            let Ok(server) = TcpStream::connect(upstream) else {
                continue;
            };
            let (client_side, server_side) = (client.try_clone(), server.try_clone());
            let (Ok(client_side), Ok(server_side)) = (client_side, server_side) else {
                continue;
            };
            std::thread::spawn(move || pass(client, server, hold));
            std::thread::spawn(move || pass(server_side, client_side, Duration::ZERO));
        }
    });
    addr
}

/// Copies `from` to `to`, holding each chunk for `hold`, until either side closes.
fn pass(mut from: TcpStream, mut to: TcpStream, hold: Duration) {
    let mut buffer = vec![0u8; 64 * 1024];
    while let Ok(n) = from.read(&mut buffer) {
        if n == 0 {
            break;
        }
        std::thread::sleep(hold);
        if to.write_all(&buffer[..n]).is_err() {
            break;
        }
    }
    let _ = to.shutdown(Shutdown::Write);
}
