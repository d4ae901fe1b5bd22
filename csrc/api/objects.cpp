// aclTensor / aclScalar / aclIntArray: creation (with the view-in-storage check), getters, destroy.
#include "objects.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>

#include "memcheck.h"
#include "status.h"

namespace ag {

const char *dtype_name(aclDataType t) {
    switch (t) {
        case ACL_FLOAT: return "DT_FLOAT";
        case ACL_FLOAT16: return "DT_FLOAT16";
        case ACL_INT8: return "DT_INT8";
        case ACL_INT32: return "DT_INT32";
        case ACL_UINT8: return "DT_UINT8";
        case ACL_INT16: return "DT_INT16";
        case ACL_UINT16: return "DT_UINT16";
        case ACL_UINT32: return "DT_UINT32";
        case ACL_INT64: return "DT_INT64";
        case ACL_UINT64: return "DT_UINT64";
        case ACL_DOUBLE: return "DT_DOUBLE";
        case ACL_BOOL: return "DT_BOOL";
        case ACL_STRING: return "DT_STRING";
        case ACL_COMPLEX64: return "DT_COMPLEX64";
        case ACL_COMPLEX128: return "DT_COMPLEX128";
        case ACL_BF16: return "DT_BF16";
        default: return "DT_UNDEFINED";
    }
}

std::string shape_str(const int64_t *dims, size_t n) {
    std::string s = "[";
    for (size_t i = 0; i < n; ++i) {
        if (i) s += ", ";
        s += std::to_string(dims[i]);
    }
    return s + "]";
}

std::string dtype_list_str(std::initializer_list<aclDataType> list) {
    std::string s = "[";
    for (aclDataType t : list) {
        if (s.size() > 1) s += ", ";
        s += dtype_name(t);
    }
    return s + "]";
}

bool is_float(aclDataType t) {
    return t == ACL_FLOAT16 || t == ACL_BF16 || t == ACL_FLOAT || t == ACL_DOUBLE;
}

kern::DType to_kern(aclDataType t) {
    switch (t) {
        case ACL_FLOAT16: return kern::DType::F16;
        case ACL_BF16: return kern::DType::BF16;
        case ACL_DOUBLE: return kern::DType::F64;
        case ACL_INT32: return kern::DType::I32;
        case ACL_INT64: return kern::DType::I64;
        case ACL_BOOL: return kern::DType::Bool;
        default: return kern::DType::F32;
    }
}

void set_view(kern::View &v, const aclTensor &t) {
    v.dtype = to_kern(t.dtype);
    v.ndim = t.rank();
    v.data = static_cast<char *>(t.data) + t.offset * int64_t(aclDataTypeSize(t.dtype));
    for (int i = 0; i < v.ndim; ++i) {
        v.shape[i] = t.view[i];
        v.stride[i] = t.strides[i];
    }
}

double scalar_value(const aclScalar &s) {
    auto get = [&](auto x) {
        std::memcpy(&x, s.value, sizeof x);
        return double(x);
    };
    switch (s.dtype) {
        case ACL_FLOAT: return get(float{});
        case ACL_DOUBLE: return get(double{});
        case ACL_FLOAT16: return kern::half_to_float(uint16_t(get(uint16_t{})));
        case ACL_BF16: return kern::bf16_to_float(uint16_t(get(uint16_t{})));
        case ACL_INT8: return get(int8_t{});
        case ACL_UINT8: return get(uint8_t{});
        case ACL_INT16: return get(int16_t{});
        case ACL_UINT16: return get(uint16_t{});
        case ACL_INT32: return get(int32_t{});
        case ACL_UINT32: return get(uint32_t{});
        case ACL_INT64: return get(int64_t{});
        case ACL_UINT64: return get(uint64_t{});
        case ACL_BOOL: return get(bool{});
        default: return 0.0;
    }
}

}  // namespace ag

using ag::fail;

namespace {

constexpr uint64_t kMaxCreateRank = 64;  // beyond any operator's limit (kern::kMaxRank), still reportable

aclTensor *create_tensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                         const int64_t *stride, int64_t offset, aclFormat format,
                         const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
    const char *fn = "aclCreateTensor";
    if ((viewDims == nullptr && viewDimsNum > 0) || (storageDims == nullptr && storageDimsNum > 0)) {
        fail(ACLNN_ERR_PARAM_NULLPTR, "%s: viewDims or storageDims is NULL with a non-zero count.", fn);
        return nullptr;
    }
    if (viewDimsNum > kMaxCreateRank || storageDimsNum > kMaxCreateRank) {
        fail(ACLNN_ERR_PARAM_INVALID, "%s: rank %llu is larger than %llu.", fn,
             (unsigned long long)std::max(viewDimsNum, storageDimsNum), (unsigned long long)kMaxCreateRank);
        return nullptr;
    }
    auto t = std::make_unique<aclTensor>();
    std::copy(viewDims, viewDims + viewDimsNum, t->view.init(viewDimsNum));
    std::copy(storageDims, storageDims + storageDimsNum, t->storage.init(storageDimsNum));
    t->offset = offset;
    t->dtype = dataType;
    t->format = format;
    t->data = tensorData;
    // A negative dim, view or storage, is accepted, as CANN does: the descriptor is kept, no
    // extent is computed from it, and every operator's phase 1 rejects it (161002).
    for (uint64_t i = 0; i < viewDimsNum && t->negative_dim < 0; ++i)
        if (viewDims[i] < 0) t->negative_dim = int(i);
    for (uint64_t i = 0; i < storageDimsNum && t->negative_storage_dim < 0; ++i)
        if (storageDims[i] < 0) t->negative_storage_dim = int(i);
    int64_t *strides = t->strides.init(viewDimsNum);
    if (stride) {
        std::copy(stride, stride + viewDimsNum, strides);
    } else {
        int64_t s = 1;
        for (uint64_t i = viewDimsNum; i-- > 0;) {
            strides[i] = s;
            s = viewDims[i] > 0 && s <= INT64_MAX / viewDims[i] ? s * viewDims[i] : s;
        }
    }
    // The view must lie inside the storage; exact arithmetic in 128 bits.
    __int128 numel = 1, lo = offset, hi = offset, storage = 1;
    if (t->negative_dim >= 0) numel = 0;  // no extent: nothing of the storage is described
    for (uint64_t i = 0; i < viewDimsNum && numel != 0; ++i) {
        numel *= viewDims[i];
        if (numel > INT64_MAX) numel = __int128(INT64_MAX) + 1;  // saturate: stays "too large"
    }
    // -1 with a negative dim; saturated where numel_overflow is set (the operators reject it)
    t->count = t->negative_dim >= 0 ? -1 : numel > INT64_MAX ? INT64_MAX : int64_t(numel);
    for (uint64_t i = 0; i < storageDimsNum && t->negative_storage_dim < 0; ++i) {
        storage *= storageDims[i];
        if (storage > INT64_MAX) {
            fail(ACLNN_ERR_PARAM_INVALID, "%s: storage %s has more than INT64_MAX elements.", fn,
                 ag::shape_str(t->storage).c_str());
            return nullptr;
        }
    }
    if (numel > INT64_MAX) {
        t->numel_overflow = true;  // no element can be addressed; the operators reject it
        return t.release();
    }
    if (numel == 0 || t->negative_storage_dim >= 0) return t.release();  // no storage extent to check against
    for (uint64_t i = 0; i < viewDimsNum; ++i) {
        __int128 span = __int128(viewDims[i] - 1) * t->strides[i];
        (span < 0 ? lo : hi) += span;
    }
    if (lo < 0 || hi >= storage) {
        fail(ACLNN_ERR_PARAM_INVALID,
             "%s: view %s with strides %s and offset %lld reaches outside storage %s.", fn,
             ag::shape_str(t->view).c_str(), ag::shape_str(t->strides).c_str(), (long long)offset,
             ag::shape_str(t->storage).c_str());
        return nullptr;
    }
    return t.release();
}

// Copies an int64 array out for the caller, who frees it with delete[] (as CANN).
aclnnStatus copy_out(const char *fn, const aclTensor *tensor, const ag::Dims aclTensor::*field, int64_t **values,
                     uint64_t *num) {
    if (!tensor || !values || !num) return fail(ACLNN_ERR_PARAM_NULLPTR, "%s: NULL argument.", fn);
    const ag::Dims &v = tensor->*field;
    int64_t *out = new (std::nothrow) int64_t[v.size() ? v.size() : 1];
    if (!out) return fail(ACLNN_ERR_INNER_NULLPTR, "%s: out of memory.", fn);
    std::copy(v.begin(), v.end(), out);
    *values = out;
    *num = v.size();
    return ACLNN_SUCCESS;
}

}  // namespace

extern "C" {

aclTensor *aclCreateTensor(const int64_t *viewDims, uint64_t viewDimsNum, aclDataType dataType,
                           const int64_t *stride, int64_t offset, aclFormat format,
                           const int64_t *storageDims, uint64_t storageDimsNum, void *tensorData) {
    aclTensor *t = ag::guarded("aclCreateTensor", [&] {
        return create_tensor(viewDims, viewDimsNum, dataType, stride, offset, format, storageDims,
                             storageDimsNum, tensorData);
    });
    if (t && ag::memcheck::enabled()) ag::memcheck::on_create(t);
    return t;
}

aclScalar *aclCreateScalar(void *value, aclDataType dataType) {
    return ag::guarded("aclCreateScalar", [&]() -> aclScalar * {
        if (!value) {
            fail(ACLNN_ERR_PARAM_NULLPTR, "aclCreateScalar: value is NULL.");
            return nullptr;
        }
        const size_t size = aclDataTypeSize(dataType);
        if (size == 0 || size > 8 || dataType == ACL_STRING) {
            fail(ACLNN_ERR_PARAM_INVALID, "aclCreateScalar: dtype %s (%d) is not a numeric type.",
                 ag::dtype_name(dataType), int(dataType));
            return nullptr;
        }
        auto *s = new aclScalar;
        s->dtype = dataType;
        std::memcpy(s->value, value, size);
        if (ag::memcheck::enabled()) ag::memcheck::on_create(s);
        return s;
    });
}

aclIntArray *aclCreateIntArray(const int64_t *value, uint64_t size) {
    return ag::guarded("aclCreateIntArray", [&]() -> aclIntArray * {
        if (!value && size > 0) {
            fail(ACLNN_ERR_PARAM_NULLPTR, "aclCreateIntArray: value is NULL with size %llu.",
                 (unsigned long long)size);
            return nullptr;
        }
        auto *a = new aclIntArray;
        a->values.assign(value, value + size);
        if (ag::memcheck::enabled()) ag::memcheck::on_create(a);
        return a;
    });
}

// memcheck: destroying an object that is not live is reported, and not deleted again.
aclnnStatus aclDestroyTensor(const aclTensor *tensor) {
    if (tensor && ag::memcheck::enabled() && !ag::memcheck::on_destroy(tensor, "aclDestroyTensor"))
        return fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyTensor: %p is not a live tensor.", static_cast<const void *>(tensor));
    delete tensor;
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyScalar(const aclScalar *scalar) {
    if (scalar && ag::memcheck::enabled() && !ag::memcheck::on_destroy(scalar, "aclDestroyScalar"))
        return fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyScalar: %p is not a live scalar.", static_cast<const void *>(scalar));
    delete scalar;
    return ACLNN_SUCCESS;
}

aclnnStatus aclDestroyIntArray(const aclIntArray *array) {
    if (array && ag::memcheck::enabled() && !ag::memcheck::on_destroy(array, "aclDestroyIntArray"))
        return fail(ACLNN_ERR_PARAM_INVALID, "aclDestroyIntArray: %p is not a live int array.",
                    static_cast<const void *>(array));
    delete array;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetViewShape(const aclTensor *tensor, int64_t **viewDims, uint64_t *viewDimsNum) {
    return copy_out("aclGetViewShape", tensor, &aclTensor::view, viewDims, viewDimsNum);
}

aclnnStatus aclGetStorageShape(const aclTensor *tensor, int64_t **storageDims, uint64_t *storageDimsNum) {
    return copy_out("aclGetStorageShape", tensor, &aclTensor::storage, storageDims, storageDimsNum);
}

aclnnStatus aclGetViewStrides(const aclTensor *tensor, int64_t **stridesValue, uint64_t *stridesNum) {
    return copy_out("aclGetViewStrides", tensor, &aclTensor::strides, stridesValue, stridesNum);
}

aclnnStatus aclGetViewOffset(const aclTensor *tensor, int64_t *offset) {
    if (!tensor || !offset) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetViewOffset: NULL argument.");
    *offset = tensor->offset;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetFormat(const aclTensor *tensor, aclFormat *format) {
    if (!tensor || !format) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetFormat: NULL argument.");
    *format = tensor->format;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetDataType(const aclTensor *tensor, aclDataType *dataType) {
    if (!tensor || !dataType) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetDataType: NULL argument.");
    *dataType = tensor->dtype;
    return ACLNN_SUCCESS;
}

aclnnStatus aclGetIntArraySize(const aclIntArray *array, uint64_t *size) {
    if (!array || !size) return fail(ACLNN_ERR_PARAM_NULLPTR, "aclGetIntArraySize: NULL argument.");
    *size = array->values.size();
    return ACLNN_SUCCESS;
}

size_t aclDataTypeSize(aclDataType dataType) {
    switch (dataType) {
        case ACL_INT8: case ACL_UINT8: case ACL_BOOL: return 1;
        case ACL_FLOAT16: case ACL_BF16: case ACL_INT16: case ACL_UINT16: return 2;
        case ACL_FLOAT: case ACL_INT32: case ACL_UINT32: return 4;
        case ACL_DOUBLE: case ACL_INT64: case ACL_UINT64: case ACL_COMPLEX64: return 8;
        case ACL_COMPLEX128: return 16;
        default: return 0;
    }
}

float aclFloat16ToFloat(aclFloat16 value) { return ag::kern::half_to_float(value); }
aclFloat16 aclFloatToFloat16(float value) { return ag::kern::float_to_half(value); }

}  // extern "C"
