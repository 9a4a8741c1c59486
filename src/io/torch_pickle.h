// PyTorch's state-dict files (torch.save of a name -> tensor dict, e.g. Hugging Face's
// pytorch_model.bin) read without Python: the ZIP format of torch >= 1.6, whose data.pkl is a
// pickle that names each tensor's storage, offset, size and stride. The pickle is interpreted by a
// restricted machine that knows only the opcodes and the few callables torch.save writes for a dict
// of tensors (collections.OrderedDict, torch._utils._rebuild_tensor_v2, _rebuild_parameter): it
// never imports or calls anything, and any other callable is an error naming it. Legacy (pre-1.6)
// files and big-endian ones are refused with a message saying how to re-save them.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "io/safetensors.h"

namespace dragoman::io {

// The tensors of a state-dict file's bytes (storages of float, double, half, bfloat16, int, uint8
// and int8), as contiguous copies in the dict's order; `name` is used in messages.
std::vector<SafeTensor> decode_torch_state_dict(const std::string& name, std::string_view bytes);
std::vector<SafeTensor> read_torch_state_dict(const std::string& path);

}  // namespace dragoman::io
