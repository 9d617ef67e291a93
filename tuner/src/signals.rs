//! Ctrl-C and SIGTERM: waiting for either, and the exit status a shell reports for it.

/// Waits for Ctrl-C (SIGINT) or SIGTERM and returns the exit status a shell
/// reports for a process they ended: 130 or 143.
pub async fn next_interrupt() -> u8 {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).ok();
    let sigterm = async {
        match term.as_mut() {
            Some(t) => {
                t.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => 130,
        _ = sigterm => 143,
    }
}
