// The optimizer step (see optimizer.h).
#include "train/optimizer.h"

#include "ops/adam.h"
#include "ops/muon.h"

namespace dragoman {

bool muon_updates(const ParameterEntry& entry) {
  return entry.spec.init == ParameterInit::kXavierUniform && entry.spec.shape.size() == 2 &&
         entry.spec.name != "output.weight";
}

void optimizer_step(ParameterSet& params, Tensor& m, Tensor& v, const cpu::AdamHyper& adam,
                    const cpu::MuonHyper* muon) {
  Tensor* mirror = params.mirror();
  if (muon == nullptr) {
    ops::adam_step(params.values(), params.grads(), m, v, adam, mirror);
    return;
  }
  // Adam over each run of consecutive parameters that Muon does not take (element-wise: the same
  // bits as one call over the whole buffer), Muon over each matrix.
  const auto adam_over = [&](std::int64_t begin, std::int64_t end) {
    if (end == begin) return;
    Tensor values = params.values().narrow(0, begin, end - begin);
    Tensor mirror_part = mirror != nullptr ? mirror->narrow(0, begin, end - begin) : Tensor();
    Tensor m_part = m.narrow(0, begin, end - begin), v_part = v.narrow(0, begin, end - begin);
    ops::adam_step(values, params.grads().narrow(0, begin, end - begin), m_part, v_part, adam,
                   mirror != nullptr ? &mirror_part : nullptr);
  };
  std::int64_t run_begin = 0;
  for (const ParameterEntry& e : params.entries()) {
    if (!muon_updates(e)) continue;
    adam_over(run_begin, e.offset);
    run_begin = e.offset + e.numel;
    const Shape& shape = e.spec.shape;  // [out, in]
    Tensor value = params.values().narrow(0, e.offset, e.numel).view(shape);
    Tensor momentum = m.narrow(0, e.offset, e.numel).view(shape);
    ops::muon_step(value, params.grads().narrow(0, e.offset, e.numel).view(shape), momentum, *muon);
    if (mirror != nullptr) {
      Tensor mirror_part = mirror->narrow(0, e.offset, e.numel);
      mirror_part.copy_from(value.view({e.numel}).to(mirror->dtype()));
    }
  }
  adam_over(run_begin, params.size());
}

}  // namespace dragoman
