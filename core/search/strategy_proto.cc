#include "core/search/strategy_proto.h"

#include <stdexcept>
#include <utility>

namespace shardlab {
namespace {

enum WireType { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

void PutTag(std::string* out, int field, WireType type) { PutVarint(out, (static_cast<uint64_t>(field) << 3) | type); }

void PutBytes(std::string* out, int field, const std::string& bytes) {
  PutTag(out, field, kLengthDelimited);
  PutVarint(out, bytes.size());
  out->append(bytes);
}

class Reader {
 public:
  explicit Reader(std::string bytes) : data_(std::move(bytes)), pos_(0) {}
  bool done() const { return pos_ >= data_.size(); }

  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (pos_ >= data_.size()) throw std::runtime_error("truncated varint");
      const auto byte = static_cast<uint8_t>(data_[pos_++]);
      v |= static_cast<uint64_t>(byte & 0x7f) << shift;
      if (!(byte & 0x80)) return v;
    }
    throw std::runtime_error("varint longer than 10 bytes");
  }

  std::string Bytes() {
    const uint64_t n = Varint();
    if (n > data_.size() - pos_) throw std::runtime_error("length-delimited field runs past the end");
    std::string out = data_.substr(pos_, n);
    pos_ += n;
    return out;
  }

  void Skip(WireType type) {
    switch (type) {
      case kVarint:
        Varint();
        return;
      case kFixed64:
        Advance(8);
        return;
      case kLengthDelimited:
        Bytes();
        return;
      case kFixed32:
        Advance(4);
        return;
    }
    throw std::runtime_error("unknown wire type " + std::to_string(static_cast<int>(type)));
  }

 private:
  void Advance(size_t n) {
    if (n > data_.size() - pos_) throw std::runtime_error("fixed-width field runs past the end");
    pos_ += n;
  }
  std::string data_;  // owned: readers are often made from a field just read
  size_t pos_;
};

// Calls on_field(field, wire type, reader) for every field of a message.
template <typename F>
void ForEachField(const std::string& bytes, F on_field) {
  Reader r(bytes);
  while (!r.done()) {
    const uint64_t tag = r.Varint();
    const int field = static_cast<int>(tag >> 3);
    const auto type = static_cast<WireType>(tag & 7);
    if (!on_field(field, type, r)) r.Skip(type);
  }
}

std::vector<int64_t> DecodeDims(const std::string& bytes) {
  std::vector<int64_t> dims;
  ForEachField(bytes, [&](int field, WireType type, Reader& r) {
    if (field != 1) return false;
    if (type == kVarint) {
      dims.push_back(static_cast<int64_t>(r.Varint()));
    } else if (type == kLengthDelimited) {  // packed
      Reader packed(r.Bytes());
      while (!packed.done()) dims.push_back(static_cast<int64_t>(packed.Varint()));
    } else {
      return false;
    }
    return true;
  });
  return dims;
}

}  // namespace

std::string EncodeStrategyMap(const ProtoStrategyMap& map) {
  std::string out;
  PutTag(&out, 1, kVarint);
  PutVarint(&out, map.current_stage);
  for (const auto& [name, entry] : map.items) {
    std::string strategys;
    PutTag(&strategys, 1, kVarint);
    PutVarint(&strategys, entry.first);
    for (const auto& tuple : entry.second) {
      std::string dims;
      for (int64_t d : tuple) {
        PutTag(&dims, 1, kVarint);
        PutVarint(&dims, static_cast<uint64_t>(d));
      }
      PutBytes(&strategys, 2, dims);
    }
    std::string item;
    PutBytes(&item, 1, name);
    PutBytes(&item, 2, strategys);
    PutBytes(&out, 2, item);
  }
  return out;
}

ProtoStrategyMap DecodeStrategyMap(const std::string& bytes) {
  ProtoStrategyMap map;
  bool has_stage = false;
  ForEachField(bytes, [&](int field, WireType type, Reader& r) {
    if (field == 1 && type == kVarint) {
      map.current_stage = static_cast<uint32_t>(r.Varint());
      has_stage = true;
      return true;
    }
    if (field != 2 || type != kLengthDelimited) return false;
    std::string name;
    std::pair<uint32_t, Strategy> entry{0, {}};
    bool has_name = false;
    ForEachField(r.Bytes(), [&](int f, WireType t, Reader& item) {
      if (f == 1 && t == kLengthDelimited) {
        name = item.Bytes();
        has_name = true;
        return true;
      }
      if (f != 2 || t != kLengthDelimited) return false;
      ForEachField(item.Bytes(), [&](int g, WireType u, Reader& s) {
        if (g == 1 && u == kVarint) {
          entry.first = static_cast<uint32_t>(s.Varint());
          return true;
        }
        if (g != 2 || u != kLengthDelimited) return false;
        entry.second.push_back(DecodeDims(s.Bytes()));
        return true;
      });
      return true;
    });
    if (!has_name) throw std::runtime_error("a parallel_strategy_item has no node_name");
    map.items[name] = std::move(entry);
    return true;
  });
  if (!has_stage) throw std::runtime_error("not a ParallelStrategyMap: required current_stage (field 1) is missing");
  return map;
}

}  // namespace shardlab
