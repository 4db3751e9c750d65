// SPDX-License-Identifier: MIT
// module.cpp - the Python module accdma_torch._C: the process group's
// class (a c10d ProcessGroup to Python) and the functions the package's
// creator and shutdown call.
#include <torch/extension.h>
#include <torch/csrc/utils/pybind.h>
#include <pybind11/stl.h>

#include "pg.hpp"

namespace py = pybind11;

PYBIND11_MODULE(_C, m) {
  m.doc() = "accdma as a torch.distributed backend (the C++ half of accdma_torch)";
  py::object base = py::module::import("torch._C._distributed_c10d").attr("ProcessGroup");
  py::class_<accdma_torch::ProcessGroupAccdma, c10d::ProcessGroup,
             c10::intrusive_ptr<accdma_torch::ProcessGroupAccdma>>(m, "ProcessGroupAccdma")
      .def("broken_reason", &accdma_torch::ProcessGroupAccdma::broken_reason,
           "Why the group is broken, or '' while it is usable.")
      .def("buffered_bytes", &accdma_torch::ProcessGroupAccdma::buffered_bytes,
           "Bytes of sends held in device memory until their recvs match.")
      .def("copy_counts", &accdma_torch::ProcessGroupAccdma::copy_counts,
           "How point-to-point ops moved their tensors: registered_sends/_recvs (the "
           "library reads or writes the tensor itself: one copy), staged_sends/_recvs, and "
           "restaged_sends (sends whose receiver was not ready within the grace period).")
      .def_property(
          "send_direct",
          [](accdma_torch::ProcessGroupAccdma& pg) { return pg.group()->send_direct; },
          [](accdma_torch::ProcessGroupAccdma& pg, bool on) { pg.group()->send_direct = on; },
          "Sends of ordinary tensors always from the tensor itself, with no grace period: "
          "done only once the recv has the data (a blocking send waits for its recv); "
          "ACCDMA_TORCH_SEND_DIRECT sets it at creation.")
      .def_property(
          "register_tensors",
          [](accdma_torch::ProcessGroupAccdma& pg) { return pg.group()->reg_on; },
          [](accdma_torch::ProcessGroupAccdma& pg, bool on) { pg.group()->reg_on = on; },
          "Sends and recvs of contiguous tensors of 64 KiB or more register them with the "
          "library instead of staging (a send once its receiver is ready); "
          "ACCDMA_TORCH_REGISTER=0 clears it at creation.")
      .def_property(
          "send_grace_us_per_mib",
          [](accdma_torch::ProcessGroupAccdma& pg) { return pg.group()->grace_us_per_mib; },
          [](accdma_torch::ProcessGroupAccdma& pg, int64_t us) {
            pg.group()->grace_us_per_mib = us < 0 ? 0 : us;
          },
          "How long a send of an ordinary tensor waits for its receiver's note before it "
          "is staged, in microseconds per MiB (ACCDMA_TORCH_SEND_GRACE sets it at creation).")
      .def_property_readonly("send_bound",
                             [](accdma_torch::ProcessGroupAccdma& pg) {
                               return pg.group()->send_bound;
                             })
      .def_property_readonly("world_device", [](accdma_torch::ProcessGroupAccdma& pg) {
        return pg.group()->aw->dev;
      })
      .def_property_readonly(
          "engines", [](accdma_torch::ProcessGroupAccdma& pg) { return pg.group()->aw->engines; },
          "Engine threads of this process's device (ACCDMA_ENGINES, else 2 where the "
          "process may run on two CPUs, 1 where it is bound to one).");
  m.def(
      "create",
      [](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
         std::vector<int64_t> globals, int64_t timeout_ms) {
        return accdma_torch::create(store, rank, size, std::move(globals), timeout_ms);
      },
      py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("global_ranks"),
      py::arg("timeout_ms"), py::call_guard<py::gil_scoped_release>(),
      "Create the accdma process group of (rank, size) over store.");
  m.def(
      "empty",
      [](accdma_torch::ProcessGroupAccdma& pg, std::vector<int64_t> sizes, py::object dtype) {
        return accdma_torch::empty(pg, sizes, torch::python::detail::py_object_to_dtype(dtype));
      },
      py::arg("pg"), py::arg("sizes"), py::arg("dtype"),
      "A zeroed tensor in the group's device memory (no staging copy when sent or received).");
  m.def("shutdown", &accdma_torch::shutdown, py::call_guard<py::gil_scoped_release>(),
        "Let buffered sends land and close every accdma world of this process.");
}
