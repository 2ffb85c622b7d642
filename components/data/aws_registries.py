"""The Amazon ECR registry that serves EKS add-on images in each AWS Region (EKS replicates them to every Region
it supports; a node pulls from its own Region's, over a VPC endpoint where there is one).

Source: the EKS user guide, "View Amazon container image registries for Amazon EKS add-ons",
awsdocs/amazon-eks-user-guide ``latest/ug/workloads/add-ons-images.adoc`` (commit 1cc6ebb4a163), copied as it
stands (ap-east-2's registry host is in ap-east-1 there).
"""

from __future__ import annotations

from types import MappingProxyType

EKS_ADDON_REGISTRIES = MappingProxyType(
    {
        "af-south-1": "877085696533.dkr.ecr.af-south-1.amazonaws.com",
        "ap-east-1": "800184023465.dkr.ecr.ap-east-1.amazonaws.com",
        "ap-east-2": "533267051163.dkr.ecr.ap-east-1.amazonaws.com",
        "ap-southeast-3": "296578399912.dkr.ecr.ap-southeast-3.amazonaws.com",
        "ap-south-2": "900889452093.dkr.ecr.ap-south-2.amazonaws.com",
        "ap-southeast-4": "491585149902.dkr.ecr.ap-southeast-4.amazonaws.com",
        "ap-southeast-6": "333609536671.dkr.ecr.ap-southeast-6.amazonaws.com",
        "ap-south-1": "602401143452.dkr.ecr.ap-south-1.amazonaws.com",
        "ap-northeast-3": "602401143452.dkr.ecr.ap-northeast-3.amazonaws.com",
        "ap-northeast-2": "602401143452.dkr.ecr.ap-northeast-2.amazonaws.com",
        "ap-southeast-1": "602401143452.dkr.ecr.ap-southeast-1.amazonaws.com",
        "ap-southeast-2": "602401143452.dkr.ecr.ap-southeast-2.amazonaws.com",
        "ap-southeast-7": "121268973566.dkr.ecr.ap-southeast-7.amazonaws.com",
        "ap-northeast-1": "602401143452.dkr.ecr.ap-northeast-1.amazonaws.com",
        "cn-north-1": "918309763551.dkr.ecr.cn-north-1.amazonaws.com.cn",
        "cn-northwest-1": "961992271922.dkr.ecr.cn-northwest-1.amazonaws.com.cn",
        "eu-central-1": "602401143452.dkr.ecr.eu-central-1.amazonaws.com",
        "eu-west-1": "602401143452.dkr.ecr.eu-west-1.amazonaws.com",
        "eu-west-2": "602401143452.dkr.ecr.eu-west-2.amazonaws.com",
        "eu-south-1": "590381155156.dkr.ecr.eu-south-1.amazonaws.com",
        "eu-west-3": "602401143452.dkr.ecr.eu-west-3.amazonaws.com",
        "eu-south-2": "455263428931.dkr.ecr.eu-south-2.amazonaws.com",
        "eu-north-1": "602401143452.dkr.ecr.eu-north-1.amazonaws.com",
        "eu-central-2": "900612956339.dkr.ecr.eu-central-2.amazonaws.com",
        "il-central-1": "066635153087.dkr.ecr.il-central-1.amazonaws.com",
        "mx-central-1": "730335286997.dkr.ecr.mx-central-1.amazonaws.com",
        "me-south-1": "558608220178.dkr.ecr.me-south-1.amazonaws.com",
        "me-central-1": "759879836304.dkr.ecr.me-central-1.amazonaws.com",
        "us-east-1": "602401143452.dkr.ecr.us-east-1.amazonaws.com",
        "us-east-2": "602401143452.dkr.ecr.us-east-2.amazonaws.com",
        "us-west-1": "602401143452.dkr.ecr.us-west-1.amazonaws.com",
        "us-west-2": "602401143452.dkr.ecr.us-west-2.amazonaws.com",
        "ca-central-1": "602401143452.dkr.ecr.ca-central-1.amazonaws.com",
        "ca-west-1": "761377655185.dkr.ecr.ca-west-1.amazonaws.com",
        "sa-east-1": "602401143452.dkr.ecr.sa-east-1.amazonaws.com",
        "us-gov-east-1": "151742754352.dkr.ecr.us-gov-east-1.amazonaws.com",
        "us-gov-west-1": "013241004608.dkr.ecr.us-gov-west-1.amazonaws.com",
        "eusc-de-east-1": "877088126301.dkr.ecr.eusc-de-east-1.amazonaws.eu",
    }
)
