#include "ipc/sysv_queue.h"

#include <sys/ipc.h>
#include <sys/msg.h>

#include "core/status.h"

namespace hotring::ipc {

absl::StatusOr<SysvQueue> SysvQueue::Create() {
  const int id = ::msgget(IPC_PRIVATE, IPC_CREAT | 0600);
  if (id < 0) return ErrnoStatus("msgget(IPC_PRIVATE)");
  return SysvQueue(id);
}

SysvQueue& SysvQueue::operator=(SysvQueue&& other) noexcept {
  if (this != &other) {
    (void)Remove();
    id_ = std::exchange(other.id_, -1);
  }
  return *this;
}

absl::Status SysvQueue::Remove() {
  const int id = std::exchange(id_, -1);
  if (id < 0) return absl::OkStatus();
  if (::msgctl(id, IPC_RMID, nullptr) != 0) return ErrnoStatus("msgctl(IPC_RMID)");
  return absl::OkStatus();
}

absl::StatusOr<int> CountSysvQueues() {
  msginfo info{};
  if (::msgctl(0, MSG_INFO, reinterpret_cast<msqid_ds*>(&info)) < 0) {
    return ErrnoStatus("msgctl(MSG_INFO)");
  }
  return info.msgpool;
}

}  // namespace hotring::ipc
